package bundle

import (
	"strings"
	"testing"
)

func FuzzManifest(f *testing.F) {
	f.Add([]byte("version 1\nparam prompt_template {}\ntok_test 0 caf\\xe9\n"))
	f.Add([]byte("version 1\nxclbin g kernels/g.xclbin MLIR_AIE\ngemm v ctx=g insts=a M=1 K=2 N=3 b_bytes=4\n"))
	f.Add([]byte("# c\n\n version 1 \r\nparam p\nparam p 2\n"))
	f.Add([]byte("refset 0 images=1 prompts=1\nref_image 0 0 ../x\nref_label 0 0 \\U0001f436\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseManifest("manifest.txt", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "manifest.txt:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		for _, x := range m.xclbins {
			if checkRel(x.File) != nil {
				t.Fatalf("accepted xclbin path %q", x.File)
			}
		}
		for _, r := range m.records {
			if r.Tag == "" || strings.HasPrefix(r.Tag, "#") {
				t.Fatalf("record with tag %q", r.Tag)
			}
			for i := range len(r.Fields) + 1 {
				if rest := r.Rest(i); len(rest) > len(r.Text) {
					t.Fatalf("Rest(%d) longer than the line", i)
				}
			}
		}
		// The model records must not panic either.
		b := &Bundle{Dir: t.TempDir(), m: m}
		_ = b.parseModelRecords("manifest.txt")
	})
}

func FuzzIndex(f *testing.F) {
	f.Add([]byte("a f32 2,3 0 24\nb u8 5 24 5\n"), int64(29))
	f.Add([]byte("a bf16 1 8 2\n# x\n\nb i32 0 16 0\n"), int64(16))
	f.Add([]byte("a f32 4294967296,4294967296 0 0\n"), int64(0))
	f.Add([]byte("a f32 1 9223372036854775800 4\n"), int64(1<<62))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		if size < 0 {
			size = -size
		}
		es, err := parseIndex("tensors.txt", data, size)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tensors.txt:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		for _, e := range es {
			if e.off < 0 || e.nbytes < 0 || e.off+e.nbytes > size || e.off%8 != 0 {
				t.Fatalf("accepted out-of-bounds entry %+v (blob %d)", e, size)
			}
			n := int64(e.dtype.Size())
			for _, d := range e.shape {
				n *= int64(d)
			}
			if n != e.nbytes {
				t.Fatalf("accepted entry %+v whose shape needs %d bytes", e, n)
			}
		}
	})
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "café", "\\x41", "🐶\t\n", "\x00\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.ContainsRune(s, '\uFFFD') && strings.ToValidUTF8(s, "\uFFFD") == s {
			e := Escape(s)
			got, err := Unescape(e)
			if err != nil || got != s {
				t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, got, err)
			}
		}
		_, _ = Unescape(s) // must not panic
	})
}
