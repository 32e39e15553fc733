package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

func TestCheckPassesOnFixture(t *testing.T) {
	dir := fixtures.TinyModel(t)
	for _, device := range []string{"cpu", "reference", "cpu --weights f16"} {
		t.Run(device, func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{"check", dir, "--device"}, strings.Fields(device)...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, "ALL CHECKS PASSED") || strings.Contains(out, "[FAIL]") {
				t.Fatalf("output:\n%s", out)
			}
			// Every stage must have run: 12 tok_tests, 7 pixel checks, both
			// towers, zero-shot and end to end.
			for _, want := range []string{"tok_test 11", "pixels 6", "image tower: cosine", "text tower: cosine", "zero-shot: top-1 agrees on 7/7", "end to end from files: zero-shot top-1 agrees on 7/7"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if n := strings.Count(out, "[ok]"); n != 25 {
				t.Errorf("%d [ok] lines, want 25:\n%s", n, out)
			}
			// Rounded weights keep the cosine gates and say which logit
			// gate they get; stored ones keep 0.001.
			gate := "max |logit diff| "
			if strings.Contains(device, "f16") {
				if !strings.Contains(out, "weights f16 (rounded from f32 at load)") || !strings.Contains(out, "(gate 0.2)") || !strings.Contains(out, "(gate 0.99999)") {
					t.Errorf("f16 check does not name its gates:\n%s", out)
				}
			} else if !strings.Contains(out, "(gate 0.001)") || !strings.Contains(out, gate) {
				t.Errorf("stored weights: logit gate 0.001 missing:\n%s", out)
			}
		})
	}
}

// copyFixture copies the tiny model folder so a test can damage it.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(fixtures.TinyModel(t))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// tensorOffset reads a tensor's byte offset from tensors.txt.
func tensorOffset(t *testing.T, dir, name string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "tensors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == name {
			off, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return off
		}
	}
	t.Fatalf("no tensor %s in tensors.txt", name)
	return 0
}

// patchFloat overwrites element i of a float32 tensor in tensors.bin.
func patchFloat(t *testing.T, dir, name string, i int, v float32) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "tensors.bin"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
	if _, err := f.WriteAt(b[:], tensorOffset(t, dir, name)+int64(4*i)); err != nil {
		t.Fatal(err)
	}
}

// readFloats reads the first n values of a float32 tensor in tensors.bin.
func readFloats(t *testing.T, dir, name string, n int) []float32 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "tensors.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4*n)
	if _, err := f.ReadAt(b, tensorOffset(t, dir, name)); err != nil {
		t.Fatal(err)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// scaleTensor multiplies the first n values of a float32 tensor by f.
func scaleTensor(t *testing.T, dir, name string, n int, f float32) {
	t.Helper()
	for i, x := range readFloats(t, dir, name, n) {
		patchFloat(t, dir, name, i, x*f)
	}
}

// normaliseRows L2-normalises the rows of a float32 tensor [rows, dim].
func normaliseRows(t *testing.T, dir, name string, rows, dim int) {
	t.Helper()
	v := readFloats(t, dir, name, rows*dim)
	for r := 0; r < rows; r++ {
		var ss float64
		for _, x := range v[r*dim : (r+1)*dim] {
			ss += float64(x) * float64(x)
		}
		if math.Abs(ss-1) < 0.01 {
			t.Fatalf("%s row %d already has norm %.3f: normalising it would not damage it", name, r, math.Sqrt(ss))
		}
		for k := r * dim; k < (r+1)*dim; k++ {
			patchFloat(t, dir, name, k, float32(float64(v[k])/math.Sqrt(ss)))
		}
	}
}

// TestCheckFailsOnWrongReference damages one reference at a time and
// expects check to name the stage and exit 1.
func TestCheckFailsOnWrongReference(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the fixture model several times")
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"token id", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "tensors.bin"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], 320) // "a</w>" where another id stands
			if _, err := f.WriteAt(b[:], tensorOffset(t, dir, "tok.3.ids")+8); err != nil {
				t.Fatal(err)
			}
		}, "[FAIL] tok_test 3"},
		{"pixel", func(t *testing.T, dir string) { patchFloat(t, dir, "ref.0.pixel_values", 3*224*224+5, 0.125) }, "[FAIL] refset 0 pixels 1"},
		{"image embedding", func(t *testing.T, dir string) { patchFloat(t, dir, "ref.0.image_embeds", 32*2+3, 9) }, "[FAIL] refset 0 image tower"},
		{"text embedding", func(t *testing.T, dir string) { patchFloat(t, dir, "ref.0.text_embeds", 32*4, -7) }, "[FAIL] refset 0 text tower"},
		// A scale error keeps every cosine at 1: only the size gates see it.
		{"image embeddings ×1.01", func(t *testing.T, dir string) { scaleTensor(t, dir, "ref.0.image_embeds", 7*32, 1.01) }, "relative error 0.0099 (row "},
		{"text embeddings normalised", func(t *testing.T, dir string) { normaliseRows(t, dir, "ref.0.text_embeds", 7, 32) }, "[FAIL] refset 0 text tower: cosine min 1.0000000"},
		{"logit", func(t *testing.T, dir string) { patchFloat(t, dir, "ref.0.logits", 7*3+1, 50) }, "[FAIL] refset 0 zero-shot"},
		{"missing logits", func(t *testing.T, dir string) { dropTensor(t, dir, "ref.0.logits") }, "[FAIL] refset 0: the bundle has no ref.0.logits tensor"},
		{"missing embeddings", func(t *testing.T, dir string) { dropTensor(t, dir, "ref.0.text_embeds") }, "[FAIL] refset 0 text tower: the bundle has no reference embeddings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t)
			tc.damage(t, dir)
			out, _, code := runCLI(t, "check", dir, "--device", "cpu")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(out, tc.want) || !strings.Contains(out, "SOME CHECKS FAILED") {
				t.Errorf("want %q and SOME CHECKS FAILED in:\n%s", tc.want, out)
			}
		})
	}
}

func TestCheckNotABundle(t *testing.T) {
	_, errOut, code := runCLI(t, "check", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "manifest.txt") {
		t.Fatalf("exit %d, stderr %q: want an error naming manifest.txt", code, errOut)
	}
}

// dropTensor removes a tensor's line from tensors.txt.
func dropTensor(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, "tensors.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			continue
		}
		keep = append(keep, line)
	}
	if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
