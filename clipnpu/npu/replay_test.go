package npu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/internal/cliptest"

	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/cpu"
	"github.com/clipidx/clipidx/clipnpu/hf"
)

func TestBFPEncodeKnownValues(t *testing.T) {
	// The rounding cases IRON measured on hardware (packing.py): 14.9375
	// rounds up to 15; in a block whose largest value is 106.5 the ties
	// 106.5 and 94.5 go to the even neighbours 106 and 94.
	cases := []struct {
		in, want []float32
	}{
		{[]float32{1, 0, 0, 0, 0, 0, 0, 0}, []float32{1, 0, 0, 0, 0, 0, 0, 0}},
		{[]float32{14.9375, 0, 0, 0, 0, 0, 0, 0}, []float32{15, 0, 0, 0, 0, 0, 0, 0}},
		{[]float32{106.5, 94.5, -3, 0.25, 0, 0, 0, 1}, []float32{106, 94, -3, 0, 0, 0, 0, 1}},
		{[]float32{-1, 1e-30, 0, 0, 0, 0, 0, 0}, []float32{-1, 0, 0, 0, 0, 0, 0, 0}},
		// 127.75 rounds to 128, which saturates at 127 on a shared
		// exponent of 2^0.
		{[]float32{127.75, 0, 0, 0, 0, 0, 0, 0}, []float32{127, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		var blk [bfpBlockBytes]byte
		encodeBFP(blk[:], c.in)
		got := make([]float32, bfpBlock)
		decodeBFP(got, blk[:])
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("bfp16(%v) = %v, want %v (block % x)", c.in, got, c.want, blk)
				break
			}
		}
	}
	var blk [bfpBlockBytes]byte
	encodeBFP(blk[:], []float32{1, 0, 0, 0, 0, 0, 0, 0})
	if blk[0] != 127 || blk[1] != 64 {
		t.Errorf("bfp16(1) block = % x, want exponent 127, mantissa 64", blk)
	}
}

func TestPackBOrder(t *testing.T) {
	// Integers in [-63, 63] are exact in bfp16ebs8, so a round trip returns
	// B unchanged only if the reorder is a permutation inverted exactly.
	for _, l := range []packLayout{
		{K: 16, N: 16, tileK: 16, tileN: 16, ctK: 8},
		{K: 64, N: 48, tileK: 32, tileN: 16, ctK: 16},
		{K: 80, N: 240, tileK: 40, tileN: 16, ctK: 8},
	} {
		B := make([]float32, l.K*l.N)
		for i := range B {
			B[i] = float32((i*37)%127 - 63)
		}
		p, err := packB(B, l)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != l.K*l.N/8*9 {
			t.Fatalf("%+v: %d packed bytes", l, len(p))
		}
		back, err := unpackB(p, l)
		if err != nil {
			t.Fatal(err)
		}
		for i := range B {
			if back[i] != B[i] {
				t.Fatalf("%+v: element %d (k %d, n %d) = %g, want %g", l, i, i/l.N, i%l.N, back[i], B[i])
			}
		}
		// The first block is B[0..7][0]: 8 consecutive k of column 0, and
		// the second column 1 (t-major inside the mmul block).
		first := make([]float32, 8)
		decodeBFP(first, p[:9])
		second := make([]float32, 8)
		decodeBFP(second, p[9:18])
		for s := 0; s < 8; s++ {
			if first[s] != B[s*l.N] || second[s] != B[s*l.N+1] {
				t.Fatalf("%+v: first blocks %v %v are not B[0..7][0], B[0..7][1]", l, first, second)
			}
		}
	}
	if _, err := packB(make([]float32, 12*16), packLayout{K: 12, N: 16, tileK: 12, tileN: 16, ctK: 12}); err == nil {
		t.Error("a k slice that is not whole 8-blocks was accepted")
	}
}

// npuTestConfig is a tiny CLIP: 17 vision tokens (24 rows apart, MHA over
// 32), 77 text tokens in 80-row slots.
func npuTestConfig() core.Config {
	return core.Config{
		Name: "tiny-npu",
		Vision: core.VisionConfig{Hidden: 32, Heads: 2, Layers: 2, MLP: 64, Patch: 8, ImageSize: 32,
			Act: "gelu", LayerNormEps: 1e-5},
		Text: core.TextConfig{Hidden: 32, Heads: 4, Layers: 2, MLP: 96, Vocab: 500, Context: 77,
			Act: "quick_gelu", LayerNormEps: 1e-5, EOS: 499},
		ProjectionDim: 16,
	}
}

var npuTestShape = exportShape{vBatch: 4, vM: 8, vMHAExtra: 8, tBatch: 8, tM: 64}

// exportRandom exports a random model and returns it with the bundle dir.
func exportRandom(t *testing.T, cfg core.Config, seed uint64) (*core.Model, string) {
	t.Helper()
	m := hf.RandomModel(cfg, seed, core.F32, core.BothTowers, 2)
	dir := t.TempDir()
	if err := exportBundle(m, dir, npuTestShape, nil); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// checkGate compares got with want, both [n, D], at gate g.
func checkGate(t *testing.T, what string, got, want []float32, n, D int, g compare.Gate) {
	t.Helper()
	s, err := compare.Embeddings(got, want, n, D)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %v", what, s)
	for _, v := range s.Check(g) {
		t.Errorf("%s, to the float32 reference: %s", what, v)
	}
}

// TestReplayMatchesReference runs the replay on the emulated NPU and
// compares every embedding with the float32 reference forward of the same
// weights, at the bf16 gates compare chooses for the NPU.
func TestReplayMatchesReference(t *testing.T) {
	cfg := npuTestConfig()
	m, dir := exportRandom(t, cfg, 7)
	ref := cpu.NewReference(m, 2)
	nb, err := OpenBundle(dir, core.Options{Threads: 2}, NewEmuDevice(2))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	info := nb.Info()
	if info.Device != core.DeviceEmulatedNPU || info.ImageBatch != 4 || info.TextBatch != 8 || info.Dim != 16 || info.Context != 77 || info.ImageSize != 32 {
		t.Errorf("Info = %+v", info)
	}

	const nImg, nTxt = 6, 11 // a full pass plus a padded one, each tower
	px, ids := cliptest.Inputs(cfg, nTxt)
	px = px[:nImg*3*32*32]
	D := cfg.ProjectionDim
	gates, err := compare.For(info)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		n    int
		got  func() ([]float32, error)
		want func() ([]float32, error)
		gate compare.Gate
	}{
		{"image", nImg, func() ([]float32, error) { return nb.EncodeImages(px, nImg) },
			func() ([]float32, error) { return ref.EncodeImages(px, nImg) }, gates.Image},
		{"text", nTxt, func() ([]float32, error) { return nb.EncodeTexts(ids, nTxt) },
			func() ([]float32, error) { return ref.EncodeTexts(ids, nTxt) }, gates.Text},
	} {
		got, err := c.got()
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.want()
		if err != nil {
			t.Fatal(err)
		}
		checkGate(t, c.name, got, want, c.n, D, c.gate)
	}

	// Padding never leaks between items: image 5 alone (a pass padded with
	// three empty images) is bit-identical to image 5 in the second pass of
	// six, and prompt 9 alone to prompt 9 of eleven.
	all, err := nb.EncodeImages(px, nImg)
	if err != nil {
		t.Fatal(err)
	}
	one, err := nb.EncodeImages(px[5*3*32*32:], 1)
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < D; j++ {
		if one[j] != all[5*D+j] {
			t.Fatalf("image 5 alone differs from image 5 in a batch at %d: %g vs %g", j, one[j], all[5*D+j])
		}
	}
	allT, _ := nb.EncodeTexts(ids, nTxt)
	oneT, err := nb.EncodeTexts(ids[9*77:10*77], 1)
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < D; j++ {
		if oneT[j] != allT[9*D+j] {
			t.Fatalf("prompt 9 alone differs from prompt 9 in a batch at %d", j)
		}
	}
}

// TestReplaySchedule records the dispatches of one image pass: per layer
// qkv chunks, one MHA per image, o chunks, AddLN, fc1, fc2, AddLN.
func TestReplaySchedule(t *testing.T) {
	cfg := npuTestConfig()
	_, dir := exportRandom(t, cfg, 3)
	dev := NewEmuDevice(1)
	b, err := OpenBundle(dir, core.Options{Threads: 1, Towers: core.ImageTower}, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nb := b.(*npuBackend)
	if nb.text != nil {
		t.Fatal("text tower built for ImageTower")
	}
	var ops []string
	nb.vision.trace = func(op string) { ops = append(ops, op) }
	px, _ := cliptest.Inputs(cfg, 1)
	before := dev.runs
	if _, err := nb.EncodeImages(px, 1); err != nil {
		t.Fatal(err)
	}
	perLayer := []string{"qkv", "mha", "mha", "mha", "mha", "o", "addln", "fc1", "fc2", "addln"}
	want := append(append([]string{}, perLayer...), perLayer...)
	if strings.Join(ops, " ") != strings.Join(want, " ") {
		t.Errorf("schedule\n got %v\nwant %v", ops, want)
	}
	// v_rows = 104 = 13 chunks of M = 8 per GEMM stage.
	rows := nb.cfg.vRows
	if rows != 104 {
		t.Fatalf("v_rows = %d, want 104", rows)
	}
	chunks := rows / 8
	if got, want := dev.runs-before, cfg.Vision.Layers*(4*chunks+4+2); got != want {
		t.Errorf("%d dispatches, want %d", got, want)
	}
	// Three distinct xclbins (GEMMs share one context).
	if dev.Contexts() != 3 {
		t.Errorf("%d contexts, want 3", dev.Contexts())
	}
	if _, err := nb.EncodeTexts(make([]int32, 77), 1); !errors.Is(err, core.ErrNoTower) {
		t.Errorf("EncodeTexts on an image-only replay: %v", err)
	}
}

// TestReplayTextOnlyIgnoresVision strips every vision record from the
// manifest: a text-only replay must not need them.
func TestReplayTextOnlyIgnoresVision(t *testing.T) {
	cfg := npuTestConfig()
	m, dir := exportRandom(t, cfg, 5)
	p := filepath.Join(dir, "manifest.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (strings.HasPrefix(f[1], "v_") || f[1] == "patch" || f[1] == "image_size") {
			continue
		}
		keep = append(keep, line)
	}
	if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBundle(dir, core.Options{}, NewEmuDevice(1)); !errors.Is(err, core.ErrBadModel) || !strings.Contains(err.Error(), "v_") {
		t.Fatalf("both towers without vision records: %v", err)
	}
	b, err := OpenBundle(dir, core.Options{Towers: core.TextTower, Threads: 2}, NewEmuDevice(2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, ids := cliptest.Inputs(cfg, 2)
	got, err := b.EncodeTexts(ids, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := cpu.NewReference(m, 2).EncodeTexts(ids, 2)
	checkGate(t, "text-only", got, want, 2, 16, compare.NPU().Text)
	if _, err := b.EncodeImages(make([]float32, 3*32*32), 1); !errors.Is(err, core.ErrNoTower) {
		t.Errorf("EncodeImages on a text-only replay: %v", err)
	}
}

func TestReplayContract(t *testing.T) {
	cfg := npuTestConfig()
	_, dir := exportRandom(t, cfg, 9)
	b, err := OpenBundle(dir, core.Options{Threads: 1}, NewEmuDevice(1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if out, err := b.EncodeImages(nil, 0); err != nil || out == nil || len(out) != 0 {
		t.Errorf("EncodeImages(nil, 0) = %v, %v", out, err)
	}
	if out, err := b.EncodeTexts(nil, 0); err != nil || out == nil || len(out) != 0 {
		t.Errorf("EncodeTexts(nil, 0) = %v, %v", out, err)
	}
	if out, err := b.EncodeImages(make([]float32, 5), 1); err == nil || out != nil {
		t.Error("short pixels accepted")
	}
	ids := make([]int32, 77)
	ids[3] = 500
	if out, err := b.EncodeTexts(ids, 1); err == nil || out != nil {
		t.Error("token id outside the vocabulary accepted")
	}
	if out, err := b.EncodeTexts(ids, -1); err == nil || out != nil {
		t.Error("negative n accepted")
	}
}

func TestReplayBadBundle(t *testing.T) {
	cfg := npuTestConfig()
	_, dir := exportRandom(t, cfg, 11)
	cases := []struct {
		name, from, to, want string
	}{
		{"missing param", "param v_rows 104\n", "", "param v_rows: missing"},
		{"rows too small", "param v_rows 104", "param v_rows 96", "v_rows=96 is too small"},
		{"M does not divide rows", "gemm v_o ctx=gemm insts=kernels/v_o.insts.bin M=8", "gemm v_o ctx=gemm insts=kernels/v_o.insts.bin M=16", "104 rows is not a multiple of M = 16"},
		{"b_bytes", "b_bytes=1280 tile_k=16 tile_n=16 ct_k=16", "b_bytes=1288 tile_k=16 tile_n=16 ct_k=16", "b_bytes=1288"},
		{"missing op", "op t_mha ", "op t_mha2 ", "no `op t_mha` record"},
	}
	orig, err := os.ReadFile(filepath.Join(dir, "manifest.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(string(orig), c.from) {
				t.Fatalf("manifest has no %q:\n%s", c.from, orig)
			}
			s := strings.Replace(string(orig), c.from, c.to, 1)
			if err := os.WriteFile(filepath.Join(dir, "manifest.txt"), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenBundle(dir, core.Options{}, NewEmuDevice(1))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
}
