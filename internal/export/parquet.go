package export

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/clipidx/clipidx/store"
)

// Fixed metadata columns. A JSON field with one of these names is dropped:
// the fixed column wins.
const (
	colPath    = "image_path" // the file path, or SHARD.tar#KEY
	colCaption = "caption"    // the .txt member of a sample; null for a plain file and a sample without one
	colSHA256  = "sha256"     // hex SHA-256 of the image bytes
	colMtime   = "mtime"      // the file's (or shard's) modification time
	// A video's frame is a row of its own, image_path VIDEO#t=SECONDS;
	// these say which video and when, null on other rows.
	colVideo     = "video_path" // the video file
	colVideoTime = "video_time" // seconds from its start
	// A path whose bytes are not UTF-8 shows U+FFFD in its STRING column
	// (which must hold UTF-8: pyarrow, polars and arrow-rs refuse or fail
	// on another); its exact bytes are here (BYTE_ARRAY, no annotation),
	// null on other rows.
	colPathBytes  = "image_path_bytes"
	colVideoBytes = "video_path_bytes"
)

// text is s as the value of a STRING column: valid UTF-8, each maximal
// invalid subpart as U+FFFD (validUTF8).
func text(s string) parquet.Value {
	return parquet.ByteArrayValue([]byte(validUTF8(s)))
}

// kind is the Parquet type chosen for a JSON field from the values seen.
type kind uint8

const (
	kNone   kind = iota // only nulls so far
	kBool               // BOOLEAN
	kInt                // INT64
	kFloat              // DOUBLE (integers and fractions mixed)
	kString             // BYTE_ARRAY UTF8
	kJSON               // mixed kinds, objects or arrays: their JSON text, as a string
)

func kindOf(v any) kind {
	switch x := v.(type) {
	case nil:
		return kNone
	case bool:
		return kBool
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return kInt
		}
		return kFloat
	case string:
		return kString
	}
	return kJSON
}

func unify(a, b kind) kind {
	switch {
	case a == b || b == kNone:
		return a
	case a == kNone:
		return b
	case (a == kInt || a == kFloat) && (b == kInt || b == kFloat):
		return kFloat
	}
	return kJSON
}

// metaSchema is the Parquet schema of the metadata files of one export:
// the fixed columns and every JSON field seen in any exported sample,
// typed from all their values, so that every partition has the same
// schema.
type metaSchema struct {
	fields map[string]kind
	schema *parquet.Schema
	index  map[string]int // column name → leaf column index
}

// decodeJSON reads a sample's JSON member as a flat object (nil when it
// is not one: the fields of such a sample are left null). Bytes that are
// not UTF-8 are replaced first (validJSON), so its strings and field
// names show them as the other text columns do.
func decodeJSON(b []byte) map[string]any {
	if len(b) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(validJSON(b)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil
	}
	return m
}

func fixedColumn(name string) bool {
	_, photo := photoColumns[name]
	return name == colPath || name == colCaption || name == colSHA256 || name == colMtime ||
		name == colVideo || name == colVideoTime || name == colPathBytes || name == colVideoBytes || photo
}

// observe adds the fields of one sample's JSON.
func (m *metaSchema) observe(js []byte) {
	for k, v := range decodeJSON(js) {
		if k == "" || fixedColumn(k) {
			continue
		}
		m.fields[k] = unify(m.fields[k], kindOf(v))
	}
}

// build makes the Parquet schema once every sample was observed.
func (m *metaSchema) build() {
	g := parquet.Group{
		colPath:    parquet.String(),
		colCaption: parquet.Optional(parquet.String()),
		colSHA256:  parquet.String(),
		colMtime:   parquet.Timestamp(parquet.Nanosecond),

		colVideo:     parquet.Optional(parquet.String()),
		colVideoTime: parquet.Optional(parquet.Leaf(parquet.DoubleType)),

		colPathBytes:  parquet.Optional(parquet.Leaf(parquet.ByteArrayType)),
		colVideoBytes: parquet.Optional(parquet.Leaf(parquet.ByteArrayType)),
	}
	addPhotoColumns(g) // photometa.go
	for k, kd := range m.fields {
		var n parquet.Node
		switch kd {
		case kBool:
			n = parquet.Leaf(parquet.BooleanType)
		case kInt:
			n = parquet.Int(64)
		case kFloat:
			n = parquet.Leaf(parquet.DoubleType)
		default: // kString, kJSON, and kNone: a column of nulls
			n = parquet.String()
		}
		g[k] = parquet.Optional(n)
	}
	m.schema = parquet.NewSchema("clipidx", g)
	m.index = map[string]int{}
	for name := range g {
		leaf, _ := m.schema.Lookup(name)
		m.index[name] = leaf.ColumnIndex
	}
}

// columns lists the column names in schema order.
func (m *metaSchema) columns() []string {
	out := make([]string, 0, len(m.index))
	for k := range m.index {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return m.index[out[i]] < m.index[out[j]] })
	return out
}

// metaWriter writes the rows of one metadata file.
type metaWriter struct {
	m   *metaSchema
	w   *parquet.Writer
	buf []parquet.Row
}

const metaRowsPerWrite = 1024

func (m *metaSchema) newWriter(out io.Writer) *metaWriter {
	return &metaWriter{m: m, w: parquet.NewWriter(out, m.schema, parquet.Compression(&parquet.Snappy))}
}

// add appends the row of one exported file.
func (mw *metaWriter) add(path string, f store.File, smp *store.Sample, pm *store.Meta) error {
	m := mw.m
	row := make(parquet.Row, len(m.index))
	for _, i := range m.index {
		row[i] = parquet.NullValue().Level(0, 0, i)
	}
	set := func(name string, v parquet.Value, optional bool) {
		i := m.index[name]
		def := 0
		if optional {
			def = 1
		}
		row[i] = v.Level(0, def, i)
	}
	set(colPath, text(path), false)
	if !utf8.ValidString(path) {
		set(colPathBytes, parquet.ByteArrayValue([]byte(path)), true)
	}
	set(colSHA256, parquet.ByteArrayValue([]byte(hex.EncodeToString(f.Hash[:]))), false)
	set(colMtime, parquet.Int64Value(f.MtimeNs), false)
	setPhoto(set, pm)
	if smp == nil {
		// A plain file's record, or a video's frame (a sample's key is no
		// frame time, whatever it reads).
		if video, t, ok := store.SplitFrame(path); ok {
			set(colVideo, text(video), true)
			if !utf8.ValidString(video) {
				set(colVideoBytes, parquet.ByteArrayValue([]byte(video)), true)
			}
			set(colVideoTime, parquet.DoubleValue(t), true)
		}
	} else {
		// A sample without a .txt member and one with an empty .txt are
		// one record in the index (store.Sample.Caption ""), which text_emb
		// also treats as no caption (a zero row): null, as for a plain file.
		if smp.Caption != "" {
			set(colCaption, text(smp.Caption), true)
		}
		for k, v := range decodeJSON(smp.JSON) {
			kd, ok := m.fields[k]
			if !ok || v == nil {
				continue
			}
			if pv, ok := toValue(v, kd); ok {
				set(k, pv, true)
			}
		}
	}
	mw.buf = append(mw.buf, row)
	if len(mw.buf) >= metaRowsPerWrite {
		return mw.flush()
	}
	return nil
}

// toValue converts a JSON value to the column's type; false leaves a null
// (a value that does not fit, which unify rules out).
func toValue(v any, kd kind) (parquet.Value, bool) {
	switch kd {
	case kBool:
		b, ok := v.(bool)
		return parquet.BooleanValue(b), ok
	case kInt:
		n, ok := v.(json.Number)
		if !ok {
			return parquet.Value{}, false
		}
		i, err := n.Int64()
		return parquet.Int64Value(i), err == nil
	case kFloat:
		n, ok := v.(json.Number)
		if !ok {
			return parquet.Value{}, false
		}
		x, err := n.Float64()
		return parquet.DoubleValue(x), err == nil
	}
	if s, ok := v.(string); ok {
		return text(s), true
	}
	js, err := json.Marshal(v)
	return parquet.ByteArrayValue(js), err == nil
}

func (mw *metaWriter) flush() error {
	if len(mw.buf) == 0 {
		return nil
	}
	if _, err := mw.w.WriteRows(mw.buf); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	mw.buf = mw.buf[:0]
	return nil
}

// close writes the pending rows and the file footer.
func (mw *metaWriter) close() error {
	if err := mw.flush(); err != nil {
		return err
	}
	if err := mw.w.Close(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}
