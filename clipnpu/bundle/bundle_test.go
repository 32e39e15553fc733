package bundle

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestTinyFixture reads the shared tiny-clip-h reference set and checks it
// against reference.json, which the fixture generator wrote independently.
func TestTinyFixture(t *testing.T) {
	dir := fixtures.TinyModel(t)
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	var ref struct {
		Texts []struct {
			Text       string    `json:"text"`
			IDs        []int32   `json:"ids"`
			TextEmbeds []float32 `json:"text_embeds"`
		} `json:"texts"`
		Images []struct {
			File        string    `json:"file"`
			ImageEmbeds []float32 `json:"image_embeds"`
		} `json:"images"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}

	if v, ok := b.Param("prompt_template"); !ok || v != "{}" {
		t.Errorf("prompt_template = %q, %v; want {}", v, ok)
	}
	tts := b.TokTests()
	if len(tts) != len(ref.Texts) {
		t.Fatalf("%d tok_tests, reference.json has %d texts", len(tts), len(ref.Texts))
	}
	for i, tt := range tts {
		if tt.Index != i || tt.Text != ref.Texts[i].Text {
			t.Errorf("tok_test %d = %d %q, want %q", i, tt.Index, tt.Text, ref.Texts[i].Text)
		}
		if !tt.HasIDs {
			t.Fatalf("tok_test %d: no ids tensor", i)
		}
		tn, err := b.TensorShaped(tt.IDs, I32, 77)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tn.I32()
		if err != nil {
			t.Fatal(err)
		}
		if !equalI32(ids, ref.Texts[i].IDs) {
			t.Errorf("tok_test %d ids differ from reference.json", i)
		}
	}

	sets, err := b.RefSets()
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 {
		t.Fatalf("%d refsets, want 1", len(sets))
	}
	rs := sets[0]
	if len(rs.Images) != len(ref.Images) || len(rs.Labels) != 7 {
		t.Fatalf("refset 0: %d images %d labels", len(rs.Images), len(rs.Labels))
	}
	for i, p := range rs.Images {
		if rs.ImageFiles[i] != ref.Images[i].File {
			t.Errorf("image %d = %s, want %s", i, rs.ImageFiles[i], ref.Images[i].File)
		}
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
		if rs.Labels[i] != ref.Texts[i].Text {
			t.Errorf("label %d = %q, want %q", i, rs.Labels[i], ref.Texts[i].Text)
		}
	}
	if rs.PixelValues == "" || rs.InputIDs == "" || rs.ImageEmbeds == "" || rs.TextEmbeds == "" || rs.Logits == "" {
		t.Fatalf("refset tensors missing: %+v", rs)
	}
	if rs.NPUImageEmbeds != "" || rs.NPUTextEmbeds != "" {
		t.Errorf("npu tensors reported present: %+v", rs)
	}
	emb, err := b.Tensor(rs.ImageEmbeds)
	if err != nil {
		t.Fatal(err)
	}
	e, err := emb.F32()
	if err != nil {
		t.Fatal(err)
	}
	dim := emb.Shape[1]
	for i, im := range ref.Images {
		for k, want := range im.ImageEmbeds {
			if got := e[i*dim+k]; math.Abs(float64(got-want)) > 1e-6 {
				t.Fatalf("image_embeds[%d][%d] = %g, reference.json %g", i, k, got, want)
			}
		}
	}
	pv, err := b.TensorShaped(rs.PixelValues, F32, 7, 3, 224, 224)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Len() != 7*3*224*224 {
		t.Errorf("pixel_values has %d elements", pv.Len())
	}
	if _, err := pv.I32(); !errors.Is(err, ErrBadBundle) {
		t.Errorf("I32 on an f32 tensor: err = %v", err)
	}
}

func equalI32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeSmall writes a valid small bundle with every record kind.
func writeSmall(t *testing.T) (string, *Writer) {
	t.Helper()
	dir := t.TempDir()
	w := NewWriter()
	w.Param("v_layers", 2)
	w.Param("mean", "0.5,0.25,,0.125")
	w.Param("prompt_template", "a photo of a {}")
	w.Line("xclbin", "gemm", "kernels/gemm.xclbin", "MLIR_AIE")
	w.Line("gemm", "v_qkv", "ctx=gemm", "insts=kernels/qkv.insts.bin", "M=256", "K=512", "N=1536", "b_bytes=884736")
	w.Line("op", "v_mha", "xclbin=kernels/mha.xclbin", "insts=kernels/mha.insts.bin", "name=MLIR_AIE")
	w.Line("tok_test", "0", Escape("café \t x"))
	w.Line("refset", "0", "images=1", "prompts=2")
	w.Line("ref_image", "0", "0", "img/a b.png")
	w.Line("ref_label", "0", "1", "second")
	w.Line("ref_label", "0", "0", Escape("fir\\st"))
	w.I32("tok.0.ids", []int{4}, []int32{1, 2, 3, 4})
	w.F32("ref.0.image_embeds", []int{1, 2}, []float32{1.5, -2})
	w.Raw("v.0.qkv", U8, []int{3}, []byte{7, 8, 9})
	if err := w.Write(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "img", "a b.png"), []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, w
}

func TestOpenSmall(t *testing.T) {
	dir, _ := writeSmall(t)
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, err := b.ParamInt("v_layers"); err != nil || n != 2 {
		t.Errorf("v_layers = %d, %v", n, err)
	}
	if f, err := b.ParamFloats("mean"); err != nil || len(f) != 3 || f[2] != 0.125 {
		t.Errorf("mean = %v, %v", f, err)
	}
	if v, _ := b.Param("prompt_template"); v != "a photo of a {}" {
		t.Errorf("prompt_template = %q", v)
	}
	if _, err := b.ParamInt("prompt_template"); !errors.Is(err, ErrBadBundle) || !strings.Contains(err.Error(), "manifest.txt:4") {
		t.Errorf("ParamInt on text: %v", err)
	}
	if _, err := b.ParamInt("nope"); err == nil {
		t.Error("missing param: no error")
	}
	g, ok := b.GEMM("v_qkv")
	if !ok || g.M != 256 || g.K != 512 || g.N != 1536 || g.BBytes != 884736 || g.Ctx != "gemm" || g.Insts != "kernels/qkv.insts.bin" {
		t.Errorf("gemm = %+v", g)
	}
	o, ok := b.Op("v_mha")
	if !ok || o.Xclbin != "kernels/mha.xclbin" || o.Name != "MLIR_AIE" {
		t.Errorf("op = %+v", o)
	}
	if x, ok := b.Xclbin("gemm"); !ok || x.File != "kernels/gemm.xclbin" || x.Kernel != "MLIR_AIE" {
		t.Errorf("xclbin = %+v", x)
	}
	tt := b.TokTests()
	if len(tt) != 1 || tt[0].Text != "café \t x" || !tt[0].HasIDs {
		t.Errorf("tok_tests = %+v", tt)
	}
	rs, err := b.RefSets()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Labels[0] != `fir\st` || rs[0].Labels[1] != "second" || rs[0].ImageFiles[0] != "img/a b.png" {
		t.Errorf("refsets = %+v", rs)
	}
	if rs[0].ImageEmbeds != "ref.0.image_embeds" || rs[0].PixelValues != "" {
		t.Errorf("refset tensors = %+v", rs[0])
	}
	u, err := b.Tensor("v.0.qkv")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := u.U8(); err != nil || string(p) != "\x07\x08\x09" {
		t.Errorf("u8 = %v, %v", p, err)
	}
	f, _ := b.Tensor("ref.0.image_embeds")
	row := make([]float32, 2)
	if err := f.F32Row(0, 2, row); err != nil || row[0] != 1.5 || row[1] != -2 {
		t.Errorf("F32Row = %v, %v", row, err)
	}
	if err := f.F32Row(1, 2, row); err == nil {
		t.Error("F32Row out of range: no error")
	}
	if _, err := b.Tensor("missing"); !errors.Is(err, ErrBadBundle) {
		t.Errorf("missing tensor: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tensor("v.0.qkv"); err == nil {
		t.Error("tensor after Close: no error")
	}
}

// TestOpenErrors damages one file of a valid bundle at a time and checks
// that the error names the file and line.
func TestOpenErrors(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		from, to string // replace in the file ("" from = append to)
		want     string
	}{
		{"no version", ManifestFile, "version 1\n", "", "no version record"},
		{"wrong version", ManifestFile, "version 1", "version 2", "version 2, this reader reads version 1"},
		{"two versions", ManifestFile, "", "version 1\n", "manifest.txt:13: second version record"},
		{"param twice", ManifestFile, "", "param v_layers 3\n", "manifest.txt:13: param v_layers defined twice (first on line 2)"},
		{"param without value", ManifestFile, "", "param lonely\n", "manifest.txt:13: want `param"},
		{"xclbin absolute", ManifestFile, "kernels/gemm.xclbin", "/etc/passwd", "manifest.txt:5: xclbin gemm: absolute path"},
		{"gemm dotdot", ManifestFile, "insts=kernels/qkv", "insts=../kernels/qkv", "manifest.txt:6: gemm: v_qkv: insts=../kernels/qkv.insts.bin: path leaves the bundle"},
		{"gemm bad ctx", ManifestFile, "ctx=gemm", "ctx=other", "manifest.txt:6: gemm: v_qkv: ctx=other names no xclbin"},
		{"gemm bad M", ManifestFile, "M=256", "M=-1", "manifest.txt:6: gemm: v_qkv: M=-1 is not a positive integer"},
		{"gemm missing N", ManifestFile, " N=1536", "", "manifest.txt:6: gemm: v_qkv: missing N="},
		{"op missing name", ManifestFile, " name=MLIR_AIE", "", "manifest.txt:7: op: v_mha: missing name="},
		{"kernel twice", ManifestFile, "", "op v_mha xclbin=a insts=b name=c\n", "manifest.txt:13: op: kernel v_mha defined twice (first on line 7)"},
		{"bad escape", ManifestFile, "tok_test 0 ", `tok_test 0 \xZZ`, "manifest.txt:8: tok_test: bad \\x escape"},
		{"tok_test twice", ManifestFile, "", "tok_test 0 again\n", "manifest.txt:13: tok_test: index 0 repeated (first on line 8)"},
		{"tok_test index", ManifestFile, "tok_test 0", "tok_test x", "manifest.txt:8: tok_test: field 1 (\"x\") is not"},
		{"refset count", ManifestFile, "images=1", "images=one", "manifest.txt:9: refset: want images=<count>"},
		{"ref_image range", ManifestFile, "ref_image 0 0", "ref_image 0 1", "manifest.txt:10: ref_image: index 1 out of range: refset 0 has 1"},
		{"ref_image unknown set", ManifestFile, "ref_image 0 0", "ref_image 5 0", "manifest.txt:10: ref_image: refset 5 is not declared"},
		{"ref_image escape", ManifestFile, "img/a b.png", "img/../../x.png", "manifest.txt:10: ref_image: img/../../x.png: path leaves the bundle"},
		{"ref_image absolute", ManifestFile, "img/a b.png", "/tmp/x.png", "manifest.txt:10: ref_image: /tmp/x.png: absolute path"},
		{"ref_label missing", ManifestFile, "ref_label 0 1 second\n", "", "manifest.txt:9: refset 0: no ref_label 0 1 record"},
		{"ref_label twice", ManifestFile, "", "ref_label 0 1 again\n", "manifest.txt:13: ref_label: refset 0 index 1 repeated"},
		{"bad utf8", ManifestFile, "second", "sec\xffond", "manifest.txt:11: not valid UTF-8"},
		{"index fields", IndexFile, "tok.0.ids i32 4 0 16", "tok.0.ids i32 4 0", "tensors.txt:1: want `<name>"},
		{"index dtype", IndexFile, "tok.0.ids i32", "tok.0.ids f64", "tensors.txt:1: tensor tok.0.ids: unknown dtype \"f64\""},
		{"index shape", IndexFile, "tok.0.ids i32 4 ", "tok.0.ids i32 4,x ", "tensors.txt:1: tensor tok.0.ids: bad shape"},
		{"index size", IndexFile, "tok.0.ids i32 4 ", "tok.0.ids i32 5 ", "tensors.txt:1: tensor tok.0.ids: 16 bytes, but shape 5 of i32 needs 20"},
		{"index align", IndexFile, "v.0.qkv u8 3 128 3", "v.0.qkv u8 3 129 3", "tensors.txt:3: tensor v.0.qkv: offset 129 is not 8-byte aligned"},
		{"index bounds", IndexFile, "v.0.qkv u8 3 128 3", "v.0.qkv u8 3 192 3", "tensors.txt:3: tensor v.0.qkv: bytes [192, 195) run past the end"},
		{"index twice", IndexFile, "", "tok.0.ids i32 4 0 16\n", "tensors.txt:4: tensor tok.0.ids defined twice (first on line 1)"},
		{"index negative", IndexFile, "v.0.qkv u8 3 128 3", "v.0.qkv u8 3 -8 3", "tensors.txt:3: tensor v.0.qkv: bad offset"},
		{"index huge shape", IndexFile, "v.0.qkv u8 3 ", "v.0.qkv u8 4294967296,4294967296 ", "tensors.txt:3: tensor v.0.qkv: shape 4294967296,4294967296 is too large"},
		{"tok ids dtype", IndexFile, "tok.0.ids i32 4 0 16", "tok.0.ids f32 4 0 16", "tensors.txt:1: tensor tok.0.ids is f32 [4], wanted i32"},
		{"ref embeds rows", IndexFile, "ref.0.image_embeds f32 1,2 64 8", "ref.0.image_embeds f32 2,1 64 8", "tensors.txt:2: tensor ref.0.image_embeds is f32 [2 1], wanted f32 with leading dims [1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := writeSmall(t)
			p := filepath.Join(dir, c.file)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s := string(data)
			if c.from == "" {
				s += c.to
			} else {
				if !strings.Contains(s, c.from) {
					t.Fatalf("%s has no %q:\n%s", c.file, c.from, s)
				}
				s = strings.Replace(s, c.from, c.to, 1)
			}
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := Open(dir)
			if err == nil {
				b.Close()
				t.Fatalf("no error; want %q", c.want)
			}
			if !errors.Is(err, ErrBadBundle) {
				t.Errorf("error %v does not match ErrBadBundle", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestNotBundle(t *testing.T) {
	dir := t.TempDir()
	if HasManifest(dir) {
		t.Error("empty dir is a bundle")
	}
	if _, err := Open(dir); !errors.Is(err, ErrNotBundle) {
		t.Errorf("Open(empty) = %v", err)
	}
	d2, _ := writeSmall(t)
	if !HasManifest(d2) {
		t.Error("small bundle is not a bundle")
	}
	if err := os.Remove(filepath.Join(d2, BlobFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(d2); err == nil || !strings.Contains(err.Error(), BlobFile) {
		t.Errorf("missing tensors.bin: %v", err)
	}
}

func TestSymlinkEscape(t *testing.T) {
	dir, _ := writeSmall(t)
	outside := filepath.Join(t.TempDir(), "secret.png")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img", "a b.png")
	if err := os.Remove(img); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, img); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	_, err := Open(dir)
	if !errors.Is(err, ErrBadBundle) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Open with an escaping link = %v", err)
	}

	// A link that stays inside is fine, and so is a bundle reached through a
	// linked directory.
	if err := os.Remove(img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real.png"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../real.png", img); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(dir, via); err != nil {
		t.Fatal(err)
	}
	b, err := Open(via)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.RefSets(); err != nil {
		t.Fatal(err)
	}

	// A missing image is an error only when the images are asked for.
	if err := os.Remove(img); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if _, err := b2.RefSets(); err == nil {
		t.Error("RefSets with a missing image: no error")
	}
}

func TestRest(t *testing.T) {
	cases := []struct {
		line string
		n    int
		want string
	}{
		{"tok_test 10   spaced\\t out  ", 1, "  spaced\\t out  "},
		{"param prompt_template a photo of a {}", 1, "a photo of a {}"},
		{"  ref_label 0 1 two  words", 2, "two  words"},
		{"ref_label 0 1", 2, ""},
		{"ref_label\t0\t1\tx", 2, "x"},
		{"tag", 0, ""},
	}
	for _, c := range cases {
		r, ok := splitRecord(1, c.line)
		if !ok {
			t.Fatalf("%q is not a record", c.line)
		}
		if got := r.Rest(c.n); got != c.want {
			t.Errorf("Rest(%q, %d) = %q, want %q", c.line, c.n, got, c.want)
		}
	}
	if _, ok := splitRecord(1, "   # comment"); ok {
		t.Error("comment is a record")
	}
}

func TestUnescape(t *testing.T) {
	cases := []struct {
		in, want string
		bad      bool
	}{
		{`plain`, "plain", false},
		{`caf\xe9 cr\xe8me`, "café crème", false},
		{`\u732b\u306e`, "猫の", false},
		{`dog \U0001f436`, "dog 🐶", false},
		{`a\tb\nc\rd\\e`, "a\tb\nc\rd\\e", false},
		{`\'\"\a\b\f\v`, "'\"\a\b\f\v", false},
		{`\101\0`, "A\x00", false},
		{`\q`, `\q`, false},
		{`\x4`, "", true},
		{`\u12g4`, "", true},
		{`\ud800`, "", true},
		{`\U00110000`, "", true},
		{`\x+1`, "", true},
		{`end\`, "", true},
	}
	for _, c := range cases {
		got, err := Unescape(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("Unescape(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.bad)
		}
	}
	for _, s := range []string{"café \t\n\r\\ x", "猫 🐶 \x7f\x01", "It's \"q\""} {
		e := Escape(s)
		if strings.ContainsAny(e, "\n\r") {
			t.Errorf("Escape(%q) = %q holds a line break", s, e)
		}
		if back, err := Unescape(e); err != nil || back != s {
			t.Errorf("round trip %q → %q → %q, %v", s, e, back, err)
		}
	}
}
