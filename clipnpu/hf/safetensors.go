package hf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// The safetensors format: an 8-byte little-endian header length N, N bytes
// of JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
// "__metadata__": {..}}, then the data; offsets are relative to the first
// byte after the header.

// maxHeader bounds the JSON header (real checkpoints use well under 1 MB).
const maxHeader = 100 << 20

// stEntry is one tensor of a safetensors file.
type stEntry struct {
	Name   string
	Dtype  string // "F32", "F16", "BF16", ... as written
	Shape  []int
	Begin  int64 // absolute byte offset in the file
	End    int64
	Elems  int64 // product of Shape
	Length int64 // End - Begin
}

// stHeader is a parsed safetensors header.
type stHeader struct {
	Tensors  map[string]stEntry
	Metadata map[string]string
	Raw      []byte // the 8 length bytes and the JSON, for WeightsHash
	DataOff  int64  // absolute offset of the data section
	FileSize int64
}

// dtypeSize is the element size of the dtypes a CLIP checkpoint may hold;
// other dtypes are accepted by the parser (with their size when known) and
// refused when a weight uses them.
var dtypeSize = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
	"U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1,
}

// errHeader marks a malformed safetensors header; callers wrap it with the
// file name and ErrBadModel.
var errHeader = errors.New("malformed safetensors header")

// headerLen reads the 8-byte prefix and checks it against the file size.
func headerLen(prefix []byte, fileSize int64) (int64, error) {
	if len(prefix) < 8 || fileSize < 8 {
		return 0, fmt.Errorf("%w: file of %d bytes is shorter than the 8-byte length prefix", errHeader, fileSize)
	}
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > maxHeader || int64(n) > fileSize-8 {
		return 0, fmt.Errorf("%w: header length %d does not fit a file of %d bytes", errHeader, n, fileSize)
	}
	return int64(n), nil
}

// parseSafetensors parses the header at the start of buf (which holds at
// least the prefix and the JSON) of a file of fileSize bytes, and checks
// every tensor's extent against the file: offsets in order, inside the
// data, and matching dtype × shape.
func parseSafetensors(buf []byte, fileSize int64) (*stHeader, error) {
	n, err := headerLen(buf, fileSize)
	if err != nil {
		return nil, err
	}
	if int64(len(buf)) < 8+n {
		return nil, fmt.Errorf("%w: truncated header (%d of %d bytes)", errHeader, len(buf)-8, n)
	}
	js := buf[8 : 8+n]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errHeader, err)
	}
	h := &stHeader{
		Tensors:  make(map[string]stEntry, len(raw)),
		Raw:      buf[:8+n],
		DataOff:  8 + n,
		FileSize: fileSize,
	}
	dataLen := fileSize - h.DataOff
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names) // errors name the same tensor on every run
	for _, name := range names {
		msg := raw[name]
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__: %v", errHeader, err)
			}
			continue
		}
		var e struct {
			Dtype   string  `json:"dtype"`
			Shape   []int64 `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", errHeader, name, err)
		}
		if e.Dtype == "" || e.Shape == nil || len(e.Offsets) != 2 {
			return nil, fmt.Errorf("%w: tensor %q lacks dtype, shape or data_offsets", errHeader, name)
		}
		b, end := e.Offsets[0], e.Offsets[1]
		if b < 0 || end < b {
			return nil, fmt.Errorf("%w: tensor %q has data_offsets [%d, %d]", errHeader, name, b, end)
		}
		if end > dataLen {
			return nil, fmt.Errorf("truncated file: %d bytes, but tensor %q ends at byte %d (is a download incomplete?)", fileSize, name, h.DataOff+end)
		}
		elems := int64(1)
		shape := make([]int, len(e.Shape))
		for i, d := range e.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("%w: tensor %q has dimension %d", errHeader, name, d)
			}
			shape[i] = int(d)
			if d != 0 && elems > math.MaxInt64/8/d {
				return nil, fmt.Errorf("%w: tensor %q shape %v overflows", errHeader, name, e.Shape)
			}
			elems *= d
		}
		if sz, ok := dtypeSize[e.Dtype]; ok && elems*sz != end-b {
			return nil, fmt.Errorf("%w: tensor %q: %s %v needs %d bytes, data_offsets give %d", errHeader, name, e.Dtype, e.Shape, elems*sz, end-b)
		}
		h.Tensors[name] = stEntry{Name: name, Dtype: e.Dtype, Shape: shape,
			Begin: h.DataOff + b, End: h.DataOff + end, Elems: elems, Length: end - b}
	}
	if err := checkOverlap(h.Tensors); err != nil {
		return nil, err
	}
	return h, nil
}

// checkOverlap refuses tensors whose byte ranges overlap (a corrupt or
// hostile header could otherwise alias weights).
func checkOverlap(ts map[string]stEntry) error {
	es := make([]stEntry, 0, len(ts))
	for _, e := range ts {
		if e.Length > 0 {
			es = append(es, e)
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Begin < es[j].Begin })
	for i := 1; i < len(es); i++ {
		if es[i].Begin < es[i-1].End {
			return fmt.Errorf("%w: tensors %q and %q overlap", errHeader, es[i-1].Name, es[i].Name)
		}
	}
	return nil
}
