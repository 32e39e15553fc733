package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// readHeader parses the preamble of a float32 C-order 2-D NPY 1.0 file the
// way numpy's reader does, checking the alignment numpy expects.
func readHeader(t *testing.T, b []byte) (rows, cols, offset int) {
	t.Helper()
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("bad magic/version %q", b[:min(len(b), 8)])
	}
	hlen := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+hlen)%64 != 0 || len(b) < 10+hlen {
		t.Fatalf("header length %d: data at %d, not 64-aligned", hlen, 10+hlen)
	}
	h := string(b[10 : 10+hlen])
	if !strings.HasSuffix(h, "\n") {
		t.Fatalf("header %q does not end with a newline", h)
	}
	m := regexp.MustCompile(`^\{'descr': '<f4', 'fortran_order': False, 'shape': \((\d+), (\d+)\), \} *\n$`).FindStringSubmatch(h)
	if m == nil {
		t.Fatalf("header %q", h)
	}
	rows, _ = strconv.Atoi(m[1])
	cols, _ = strconv.Atoi(m[2])
	return rows, cols, 10 + hlen
}

// readNPY parses a whole float32 [rows, cols] NPY file.
func readNPY(t *testing.T, b []byte) (rows, cols int, data []float32) {
	t.Helper()
	rows, cols, off := readHeader(t, b)
	body := b[off:]
	if len(body) != 4*rows*cols {
		t.Fatalf("%d data bytes for shape (%d, %d)", len(body), rows, cols)
	}
	data = make([]float32, rows*cols)
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
	}
	return rows, cols, data
}

func TestHeaderAlignment(t *testing.T) {
	for _, shape := range [][2]int{{0, 1024}, {2, 3}, {123456789, 1024}, {7, 768}} {
		var buf bytes.Buffer
		if err := writeNPYHeader(&buf, shape[0], shape[1]); err != nil {
			t.Fatal(err)
		}
		rows, cols, off := readHeader(t, buf.Bytes())
		if rows != shape[0] || cols != shape[1] || off != buf.Len() {
			t.Errorf("shape %v: read back (%d, %d), header %d bytes", shape, rows, cols, buf.Len())
		}
	}
}

func TestExport(t *testing.T) {
	const dim = 12
	dir := t.TempDir()
	db := filepath.Join(dir, "index.db")
	w, err := store.OpenWriter(db, store.Identity{Model: "test", Dim: dim, Preprocess: "test"}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	var b store.Batch
	for _, p := range []string{"/a/3.jpg", "/a/1.jpg", "/b/2.jpg", "/a/sub/4.png"} {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		b.Put(p, store.File{Size: 1, Hash: sha256.Sum256([]byte(p))}, v)
	}
	b.Put("/b/copy of 1.jpg", store.File{Size: 1, Hash: sha256.Sum256([]byte("/a/1.jpg"))}, nil)
	b.Put("/a/broken.jpg", store.File{Size: 1, Err: "decode: corrupt JPEG"}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()

	tests := []struct {
		name  string
		args  []string
		paths []string
	}{
		{"all", nil, []string{"/a/1.jpg", "/a/3.jpg", "/a/sub/4.png", "/b/2.jpg", "/b/copy of 1.jpg"}},
		{"unique", []string{"-unique"}, []string{"/a/1.jpg\t/b/copy of 1.jpg", "/a/3.jpg", "/a/sub/4.png", "/b/2.jpg"}},
		{"under", []string{"-under", "/a"}, []string{"/a/1.jpg", "/a/3.jpg", "/a/sub/4.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := filepath.Join(dir, tt.name)
			var out, errb bytes.Buffer
			if err := run(append([]string{"-db", db, "-out", prefix}, tt.args...), &out, &errb); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			npy, err := os.ReadFile(prefix + ".npy")
			if err != nil {
				t.Fatal(err)
			}
			rows, cols, data := readNPY(t, npy)
			txt, err := os.ReadFile(prefix + ".paths.txt")
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(txt), "\n"), "\n")
			if strings.Join(lines, "|") != strings.Join(tt.paths, "|") || rows != len(lines) || cols != dim {
				t.Fatalf("shape (%d, %d), paths %q; want %q", rows, cols, lines, tt.paths)
			}
			// Each row is exactly the stored vector of its line's file.
			rd, err := store.OpenReader(db, store.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			err = rd.View(func(s *store.Snapshot) error {
				for i, l := range lines {
					f, ok, err := s.File(strings.Split(l, "\t")[0])
					if err != nil || !ok {
						t.Fatalf("%s: %v %v", l, ok, err)
					}
					want := s.Vector(f.Vec)
					var norm float64
					for j := range dim {
						if data[i*dim+j] != want[j] {
							t.Fatalf("row %d (%s) differs from the stored vector", i, l)
						}
						norm += float64(want[j]) * float64(want[j])
					}
					if math.Abs(norm-1) > 1e-5 {
						t.Errorf("row %d has norm² %g, want unit vectors", i, norm)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
