package export

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
)

var npyDict = regexp.MustCompile(`^\{'descr': '([<>|][a-z][0-9]+)', 'fortran_order': False, 'shape': \(([0-9]+), ([0-9]+)\), \} *\n$`)

// npyHeader returns the NPY format 1.0 preamble of a C-order little-endian
// array [rows, cols] of descr ('<f2' or '<f4'): the magic "\x93NUMPY",
// version 1.0, a little-endian uint16 header length, then a Python dict
// literal padded with spaces and ended by a newline so that the data
// starts at a multiple of 64 bytes. The dict stays on one line, since
// embedding-reader parses that line.
func npyHeader(descr string, rows, cols int) ([]byte, error) {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", descr, rows, cols)
	const prefix = 10 // magic (6) + version (2) + header length (2)
	total := (prefix + len(dict) + 1 + 63) / 64 * 64
	hlen := total - prefix
	if hlen > math.MaxUint16 {
		return nil, fmt.Errorf("npy header of %d bytes does not fit format 1.0", hlen)
	}
	b := make([]byte, 0, total)
	b = append(b, "\x93NUMPY\x01\x00"...)
	b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	b = append(b, dict...)
	for len(b) < total-1 {
		b = append(b, ' ')
	}
	return append(b, '\n'), nil
}

// npyInfo is what readNPYHeader finds in an existing file.
type npyInfo struct {
	descr      string
	rows, cols int
}

// readNPYHeader parses the header written by npyHeader (and by numpy for
// a 2-D C-order array), enough to tell whether another partition belongs
// to the same export.
func readNPYHeader(r io.Reader) (npyInfo, error) {
	var info npyInfo
	pre := make([]byte, 10)
	if _, err := io.ReadFull(r, pre); err != nil {
		return info, fmt.Errorf("npy header: %w", err)
	}
	if string(pre[:6]) != "\x93NUMPY" || pre[6] != 1 {
		return info, fmt.Errorf("not an NPY 1.x file")
	}
	dict := make([]byte, binary.LittleEndian.Uint16(pre[8:]))
	if _, err := io.ReadFull(r, dict); err != nil {
		return info, fmt.Errorf("npy header: %w", err)
	}
	m := npyDict.FindStringSubmatch(string(dict))
	if m == nil {
		return info, fmt.Errorf("npy header %q: not a 2-D C-order array", dict)
	}
	info.descr = m[1]
	info.rows, _ = strconv.Atoi(m[2])
	info.cols, _ = strconv.Atoi(m[3])
	return info, nil
}

// f16 rounds a float32 to the nearest IEEE 754 binary16 (ties to even),
// overflowing to infinity and keeping NaN a NaN, as numpy's astype does.
// Without data-dependent branches in the normal range (the rounding is an
// addition whose carry does the work), since a branch on the rounding bits
// of random data mispredicts half the time.
func f16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a >= 0x47800000: // |x| >= 65536 (rounds to infinity), infinity, NaN
		if a > 0x7f800000 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case a < 0x38800000: // |x| < 2^-14: a subnormal half, or zero
		// Adding 0.5 (ulp 2^-24, the subnormal step) lets the FPU round
		// to nearest even; the mantissa then holds the half's bits.
		f := math.Float32frombits(a) + 0.5
		return sign | uint16(math.Float32bits(f)-0x3f000000)
	}
	// Rebias the exponent (127 → 15) and add just under half an ulp of
	// the result, plus one when the kept mantissa is odd (ties to even).
	a += 0xc8000fff + (a>>13)&1
	return sign | uint16(a>>13)
}

// WriteNPYHeader writes the NPY 1.0 header of a C-order little-endian
// array [rows, cols] of descr ("<f2" or "<f4"), the data to follow at a
// multiple of 64 bytes (for writers of other row sets, such as
// examples/exportnpy).
func WriteNPYHeader(w io.Writer, descr string, rows, cols int) error {
	b, err := npyHeader(descr, rows, cols)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
