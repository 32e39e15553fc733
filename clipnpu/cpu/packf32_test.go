package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
)

// packTestConfig is a small CLIP whose towers have float32 matrices of
// several shapes, for the packing tests.
var packTestConfig = core.Config{
	Name:          "test",
	Vision:        core.VisionConfig{Hidden: 64, Heads: 4, Layers: 2, MLP: 256, Patch: 14, ImageSize: 56, Act: "gelu", LayerNormEps: 1e-5},
	Text:          core.TextConfig{Hidden: 48, Heads: 4, Layers: 2, MLP: 192, Vocab: 1000, Context: 20, Act: "gelu", LayerNormEps: 1e-5, EOS: 999},
	ProjectionDim: 32,
}

// TestPackF32SecondUse checks that with Options.PackEarly the float32
// weights are packed at their second pass and not before, that the stored elements are let go, that
// 16-bit weights stay as they are, and that packing changes no bit of the
// embeddings.
func TestPackF32SecondUse(t *testing.T) {
	cfg := packTestConfig
	const n = 3
	r := rand.New(rand.NewPCG(3, 4))
	S, T := cfg.Vision.ImageSize, cfg.Text.Context
	px := make([]float32, n*3*S*S)
	for i := range px {
		px[i] = float32(r.NormFloat64())
	}
	ids := make([]int32, n*T)
	for i := range ids {
		ids[i] = int32(r.IntN(990))
	}
	for b := 0; b < n; b++ {
		ids[b*T+5+b] = 999
	}
	// passes runs 3 image and text passes with packing at the second pass
	// (after 2) or never (after 0).
	passes := func(dt core.Dtype, after int, pays bool, check func(pass int, f *fastCPU)) [][]float32 {
		t.Helper()
		prevOff, prevPays := packOff, packPays
		packOff, packPays = after == 0, func() bool { return pays }
		defer func() { packOff, packPays = prevOff, prevPays }()
		b, err := NewFast(hf.RandomModel(cfg, 7, dt, core.BothTowers, 2), core.Options{Threads: 2, PackEarly: after == 2})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		f := b.(*fastCPU)
		var out [][]float32
		for pass := 1; pass <= 3; pass++ {
			out = append(out, embedBoth(t, f, px, ids, n)...)
			check(pass, f)
		}
		return out
	}
	// packedLins counts the matrices of f packed, and fails t if a packed
	// one still holds its stored elements.
	packedLins := func(f *fastCPU) (packed, all int) {
		var ls []*lin
		for _, tw := range []*fastTower{f.vis, f.txt} {
			for i := range tw.layers {
				l := &tw.layers[i]
				ls = append(ls, &l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2)
			}
			ls = append(ls, &tw.proj)
		}
		ls = append(ls, &f.patch)
		for _, w := range ls {
			if w.m.Packed() {
				packed++
				if w.m.F32 != nil || w.src.F32 != nil {
					t.Errorf("a packed [%d, %d] matrix still holds its stored elements", w.m.Rows, w.m.Cols)
				}
			}
		}
		return packed, len(ls)
	}
	plain := passes(core.F32, 0, true, func(pass int, f *fastCPU) {
		if p, _ := packedLins(f); p != 0 {
			t.Fatalf("packing off, yet %d matrices packed", p)
		}
	})
	packed := passes(core.F32, 2, true, func(pass int, f *fastCPU) {
		p, all := packedLins(f)
		if want := map[bool]int{true: 0, false: all}[pass == 1]; p != want {
			t.Errorf("after pass %d: %d of %d matrices packed, want %d", pass, p, all, want)
		}
		// Info says so once it has happened, and not before.
		note := fmt.Sprintf("; %d matrices, ", all)
		if got := f.Info().Weights; strings.Contains(got, note) != (pass > 1) || strings.Contains(got, "packed") != (pass > 1) {
			t.Errorf("after pass %d: Info().Weights = %q, want %q in it exactly when packed", pass, got, note)
		}
	})
	for i := range plain {
		what := fmt.Sprintf("pass %d %s", i/2+1, []string{"image", "text"}[i%2])
		for j := range plain[i] {
			if math.Float32bits(packed[i][j]) != math.Float32bits(plain[i][j]) {
				t.Fatalf("%s: element %d is %v packed, %v unpacked (want bit-identical)", what, j, packed[i][j], plain[i][j])
			}
		}
	}
	passes(core.F16, 2, true, func(pass int, f *fastCPU) {
		if p, _ := packedLins(f); p != 0 {
			t.Fatalf("f16 weights: %d matrices packed as float32", p)
		}
	})
	// A file read into memory (no mmap): its tensors stay as they are.
	var heldFC1 *lin
	passes(core.F32, 2, true, func(pass int, f *fastCPU) {
		if heldFC1 == nil {
			heldFC1 = &f.vis.layers[0].fc1
			f.m.Mapping = &core.Mapping{Data: matrixBytes(&heldFC1.m)}
		}
		p, all := packedLins(f)
		if pass > 1 && (p != all-1 || heldFC1.m.Packed()) {
			t.Errorf("after pass %d with a tensor in a file read into memory: %d of %d packed (that one: %v), want all others", pass, p, all, heldFC1.m.Packed())
		}
	})
	passes(core.F32, 2, false, func(pass int, f *fastCPU) {
		if p, _ := packedLins(f); p != 0 {
			t.Fatalf("a kernel that gains nothing from packing: %d matrices packed", p)
		}
	})
}

// TestPackWhenPaid checks the default packing policy: a tower's float32
// weights are packed at the first pass after its passes have taken
// packCostPerByte·bytes/packSaving, each tower on its own account.
func TestPackWhenPaid(t *testing.T) {
	cfg := packTestConfig
	// A stopped clock: the passes' own time (longer under the race
	// detector) never counts, only what the test sets.
	prevOff, prevPays, prevClock := packOff, packPays, packClock
	epoch := time.Now()
	packOff, packPays, packClock = false, func() bool { return true }, func() time.Time { return epoch }
	defer func() { packOff, packPays, packClock = prevOff, prevPays, prevClock }()
	b, err := NewFast(hf.RandomModel(cfg, 7, core.F32, core.BothTowers, 2), core.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f := b.(*fastCPU)
	S, T := cfg.Vision.ImageSize, cfg.Text.Context
	px := make([]float32, 3*S*S)
	ids := make([]int32, T)
	ids[3] = 999
	image := func() {
		if _, err := f.EncodeImages(px, 1); err != nil {
			t.Fatal(err)
		}
	}
	text := func() {
		if _, err := f.EncodeTexts(ids, 1); err != nil {
			t.Fatal(err)
		}
	}
	packed := func(tw *fastTower) (n int) {
		for i := range tw.layers {
			l := &tw.layers[i]
			for _, w := range []*lin{&l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2} {
				if w.m.Packed() {
					n++
				}
			}
		}
		return n
	}
	// The vision tower's float32 bytes: 2 layers of 4·64² + 2·64·256, the
	// projection 32·64 and the patch embedding 64·3·14².
	bytes := int64(4 * (2*(4*64*64+2*64*256) + 32*64 + 64*3*14*14))
	if got := f.packableBytes(f.vis); got != bytes {
		t.Fatalf("vision tower: %d packable bytes, want %d", got, bytes)
	}
	due := time.Duration(math.Ceil(packCostPerByte * float64(bytes) / packSaving * 1e9))
	// A pass adds its time to its tower's account (a clock that moves 1 ms
	// a reading: 1 ms a pass), then the clock stops again.
	tick := epoch
	packClock = func() time.Time { tick = tick.Add(time.Millisecond); return tick }
	image()
	if f.vis.spent != time.Millisecond || f.txt.spent != 0 {
		t.Fatalf("one image pass of 1 ms: accounts %v (image), %v (text), want 1ms and 0s", f.vis.spent, f.txt.spent)
	}
	f.vis.spent = 0
	packClock = func() time.Time { return epoch }
	for i := range 3 {
		image()
		text()
		if n := packed(f.vis) + packed(f.txt); n != 0 {
			t.Fatalf("after %d cheap passes: %d matrices packed", i+1, n)
		}
	}
	f.vis.spent = due - due/100 // not yet paid for
	image()
	if n := packed(f.vis); n != 0 {
		t.Fatalf("image passes worth %v of %v: %d matrices packed", f.vis.spent, due, n)
	}
	f.vis.spent = due
	image()
	text()
	if n, m := packed(f.vis), packed(f.txt); n != 12 || m != 0 {
		t.Errorf("image passes worth %v: %d image and %d text matrices packed, want 12 and 0", due, n, m)
	}
	f.txt.spent = time.Hour
	text()
	if n := packed(f.txt); n != 12 {
		t.Errorf("text passes worth an hour: %d text matrices packed, want 12", n)
	}
}
