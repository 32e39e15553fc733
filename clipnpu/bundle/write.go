package bundle

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Writer assembles a bundle in memory and writes it to a directory: what the
// tests of this package and of the NPU replay use to make small bundles. It
// writes tensors 64-byte aligned, as IRON's exporter does.
type Writer struct {
	lines []string
	index []string
	blob  []byte
	err   error
}

// NewWriter starts a bundle with a `version` record.
func NewWriter() *Writer {
	return &Writer{lines: []string{"version " + strconv.Itoa(Version)}}
}

// Line appends a manifest line as given (fields joined by single spaces).
func (w *Writer) Line(fields ...string) { w.lines = append(w.lines, strings.Join(fields, " ")) }

// Param appends `param <name> <value>`.
func (w *Writer) Param(name string, value any) { w.Line("param", name, fmt.Sprint(value)) }

// Raw appends bytes for a tensor of dtype d and shape; len(data) must match.
func (w *Writer) Raw(name string, d Dtype, shape []int, data []byte) {
	n := d.Size()
	dims := make([]string, len(shape))
	for i, s := range shape {
		n *= s
		dims[i] = strconv.Itoa(s)
	}
	if n != len(data) && w.err == nil {
		w.err = fmt.Errorf("tensor %s: %d bytes for shape %v of %s", name, len(data), shape, d)
	}
	for len(w.blob)%64 != 0 {
		w.blob = append(w.blob, 0)
	}
	w.index = append(w.index, fmt.Sprintf("%s %s %s %d %d", name, d, strings.Join(dims, ","), len(w.blob), len(data)))
	w.blob = append(w.blob, data...)
}

// F32 adds a float32 tensor.
func (w *Writer) F32(name string, shape []int, v []float32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	w.Raw(name, F32, shape, b)
}

// I32 adds an int32 tensor.
func (w *Writer) I32(name string, shape []int, v []int32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	w.Raw(name, I32, shape, b)
}

// Write writes manifest.txt, tensors.txt and tensors.bin into dir (which
// must exist).
func (w *Writer) Write(dir string) error {
	if w.err != nil {
		return w.err
	}
	files := []struct {
		name string
		data []byte
	}{
		{ManifestFile, []byte(strings.Join(w.lines, "\n") + "\n")},
		{IndexFile, []byte(strings.Join(w.index, "\n") + "\n")},
		{BlobFile, w.blob},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}
