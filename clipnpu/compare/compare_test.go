package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// embeddings returns n random rows of dim with norms far from 1 (as CLIP's
// unnormalised embeddings are), so normalising them is a scale error.
func embeddings(n, dim int) []float32 {
	rng := rand.New(rand.NewPCG(3, 4))
	v := make([]float32, n*dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * 0.7)
	}
	return v
}

// noisy returns want plus independent noise of relative size rel per value.
func noisy(want []float32, rel float64) []float32 {
	rng := rand.New(rand.NewPCG(5, 6))
	got := make([]float32, len(want))
	for i, x := range want {
		got[i] = x + float32(rel*0.7*rng.NormFloat64())
	}
	return got
}

func measure(t *testing.T, got, want []float32, n, dim int) Stats {
	t.Helper()
	s, err := Embeddings(got, want, n, dim)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGatesSeeSize: every gate passes the noise its backend measures and
// fails errors of size that leave the direction alone, which a cosine gate
// cannot see.
func TestGatesSeeSize(t *testing.T) {
	const n, dim = 5, 64
	want := embeddings(n, dim)
	scaled := func(f float32) []float32 {
		v := append([]float32(nil), want...)
		for i := range v {
			v[i] *= f
		}
		return v
	}
	normalised := append([]float32(nil), want...)
	core.Normalize(normalised, dim)
	flipped := append([]float32(nil), want...)
	for i := 2 * dim; i < 3*dim; i++ {
		flipped[i] = -flipped[i] // row 2 points the other way
	}
	withNaN := append([]float32(nil), want...)
	withNaN[dim+7] = float32(math.NaN())
	withInf := append([]float32(nil), want...)
	withInf[3] = float32(math.Inf(-1))
	spike := append([]float32(nil), want...)
	spike[4*dim+9] += 0.05 // one value of one row off by 7 % of a typical value

	f32, npu := F32CPU().Image, NPU().Image
	for _, c := range []struct {
		name    string
		got     []float32
		gate    Gate
		pass    bool
		because string // in the violation when it fails
	}{
		{"f32 noise passes f32", noisy(want, 2e-6), f32, true, ""},
		{"×1.01 fails f32", scaled(1.01), f32, false, "relative error"},
		{"×0.5 fails f32", scaled(0.5), f32, false, "relative error"},
		{"normalised fails f32", normalised, f32, false, "relative error"},
		{"×1.0001 fails f32", scaled(1.0001), f32, false, "relative error"},
		{"sign flip fails f32", flipped, f32, false, "cosine -1.0000000 (row 2)"},
		{"NaN fails f32", withNaN, f32, false, "1 NaN or infinite values"},
		{"-Inf fails f32", withInf, f32, false, "1 NaN or infinite values"},
		{"one spike fails f32", spike, f32, false, "max |diff|"},
		{"bf16 noise passes NPU", noisy(want, 0.03), npu, true, ""},
		{"×1.2 fails NPU", scaled(1.2), npu, false, "relative error"},
		{"normalised fails NPU", normalised, npu, false, "relative error"},
		{"sign flip fails NPU", flipped, npu, false, "cosine"},
		{"NaN fails NPU", withNaN, npu, false, "NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := measure(t, c.got, want, n, dim)
			v := s.Check(c.gate)
			if (len(v) == 0) != c.pass {
				t.Fatalf("violations %q, want pass %v (%v)", v, c.pass, s)
			}
			if !c.pass && !strings.Contains(strings.Join(v, "; "), c.because) {
				t.Errorf("violations %q do not say %q", v, c.because)
			}
		})
	}
	// The scale errors above keep the direction: the cosine alone passes them.
	for _, f := range []float32{1.01, 0.5} {
		if s := measure(t, scaled(f), want, n, dim); !(s.MinCosine >= 0.9999999) {
			t.Errorf("×%g: cosine %v, want 1", f, s.MinCosine)
		}
	}
	if s := measure(t, normalised, want, n, dim); !(s.MinCosine >= 0.9999999) {
		t.Errorf("normalised: cosine %v, want 1", s.MinCosine)
	}
}

// TestEmbeddingsStats checks the figures on a case worked by hand.
func TestEmbeddingsStats(t *testing.T) {
	want := []float32{3, 4, 0, 0, 0, 2} // rows [3 4 0] (norm 5), [0 0 2]
	got := []float32{3, 4, 0, 0, 1, 2}  // row 1 off by 1 in one value
	s := measure(t, got, want, 2, 3)
	cos1 := 2 / math.Sqrt(5)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"MinCosine", s.MinCosine, cos1},
		{"MeanCosine", s.MeanCosine, (1 + cos1) / 2},
		{"MaxRelErr", s.MaxRelErr, 0.5},
		{"RelErr", s.RelErr, 1 / math.Sqrt(29)},
		{"MaxAbsDiff", s.MaxAbsDiff, 1},
		{"MaxAbsWant", s.MaxAbsWant, 4},
		{"DiffRatio", s.DiffRatio(), 0.25},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.WorstCosineRow != 1 || s.WorstRelErrRow != 1 || s.Rows != 2 || s.Dim != 3 {
		t.Errorf("worst rows %d %d, shape %d×%d", s.WorstCosineRow, s.WorstRelErrRow, s.Rows, s.Dim)
	}
	// Zero rows: cosine 0 (never a pass), relative error 0 when both are
	// zero and +Inf when only the reference is.
	z := measure(t, []float32{0, 0, 1, 0}, []float32{0, 0, 0, 0}, 2, 2)
	if z.MinCosine != 0 || !math.IsInf(z.MaxRelErr, 1) || z.WorstRelErrRow != 1 || len(z.Check(F32CPU().Image)) == 0 {
		t.Errorf("zero reference: %+v", z)
	}
	if v := measure(t, nil, nil, 0, 4).Check(F32CPU().Image); len(v) != 1 || v[0] != "no rows compared" {
		t.Errorf("no rows: %q", v)
	}
	if c := Cosine([]float32{1, 0}, []float32{0, 2}); c != 0 {
		t.Errorf("Cosine of orthogonal vectors = %v", c)
	}
}

func TestShapeMismatch(t *testing.T) {
	v := make([]float32, 12)
	for _, c := range []struct {
		name      string
		got, want []float32
		n, dim    int
	}{
		{"got short", v[:11], v, 3, 4},
		{"want long", v[:8], v, 2, 4},
		{"n·dim differs", v, v, 2, 4},
		{"negative n", nil, nil, -1, 4},
		{"zero dim", nil, nil, 0, 0},
	} {
		if _, err := Embeddings(c.got, c.want, c.n, c.dim); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := Logits(v, v[:6], 3, 4); err == nil {
		t.Error("Logits with a short reference: no error")
	}
	if _, err := Logits(nil, nil, 1, 0); err == nil {
		t.Error("Logits with no texts: no error")
	}
}

func TestLogits(t *testing.T) {
	want := []float32{
		20, 25, 10, // image 0: text 1
		30, 5, 29.9995, // image 1: text 0
	}
	got := []float32{
		20.0004, 25, 10,
		30, 5, 29.9995,
	}
	s, err := Logits(got, want, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Top1Agree != 2 || s.Top1[0] != 1 || s.Top1[1] != 0 || math.Abs(s.MaxAbsDiff-4e-4) > 1e-5 || s.WorstImage != 0 || s.WorstText != 0 {
		t.Errorf("stats %+v", s)
	}
	if v := s.Check(F32CPU().Logit); len(v) != 0 {
		t.Errorf("within 1e-3: %q", v)
	}
	// A logit off by 2e-3 that turns image 1's top-1 fails both checks.
	got[5] = 30.0015
	s, _ = Logits(got, want, 2, 3)
	if v := s.CheckTop1(); len(v) != 1 || !strings.Contains(v[0], "1/2 images: image 1 picks text 2, the reference 0") {
		t.Errorf("CheckTop1: %q", v)
	}
	if v := s.CheckValues(F32CPU().Logit); len(v) != 1 || !strings.Contains(v[0], "(image 1, text 2)") {
		t.Errorf("CheckValues: %q", v)
	}
	if v := s.CheckValues(F16Weights().Logit); len(v) != 0 {
		t.Errorf("CheckValues at the f16 bar: %q", v)
	}
	if s.MaxProbDiff <= 0 || s.MaxProbDiff >= 1 {
		t.Errorf("MaxProbDiff %v", s.MaxProbDiff)
	}
	got[1] = float32(math.NaN())
	s, _ = Logits(got, want, 2, 3)
	if v := s.CheckValues(100); len(v) == 0 {
		t.Error("a NaN logit passed")
	}
	s, _ = Logits(nil, nil, 0, 3)
	if len(s.Check(1)) == 0 {
		t.Error("no images compared passed")
	}
}

// TestFor: the gates follow the device, the rounding and the precision.
func TestFor(t *testing.T) {
	for _, c := range []struct {
		info core.Info
		want Gates
	}{
		{core.Info{Device: core.DeviceReference}, F32CPU()},
		{core.Info{Device: core.DeviceCPU}, F32CPU()},
		{core.Info{Device: core.DeviceCPU, Precision: "f32"}, F32CPU()},
		{core.Info{Device: core.DeviceCPU, Rounded: "f16"}, F16Weights()},
		{core.Info{Device: core.DeviceCPU, Precision: "bf16"}, BF16CPU()},
		{core.Info{Device: core.DeviceCPU, Precision: "bf16", Rounded: "f16"}, BF16CPU()},
		{core.Info{Device: "npu"}, NPU()},
		{core.Info{Device: core.DeviceEmulatedNPU}, NPU()},
	} {
		got, err := For(c.info)
		if err != nil || got != c.want {
			t.Errorf("For(%+v) = %v, %v; want %s", c.info, got.Numerics, err, c.want.Numerics)
		}
	}
	for _, info := range []core.Info{{Device: core.DeviceCPU, Precision: "int8"}, {Device: core.DeviceCPU, Rounded: "bf16"}} {
		if g, err := For(info); err == nil {
			t.Errorf("For(%+v) = %s, want an error", info, g.Numerics)
		}
	}
	// Each way of running has its own bars, ordered as its numerics are.
	f32, f16, npu := F32CPU(), F16Weights(), NPU()
	if !(f32.Image.MaxRelErr < f16.Image.MaxRelErr && f16.Image.MaxRelErr < npu.Image.MaxRelErr) ||
		!(f32.Logit < f16.Logit && f16.Logit < npu.Logit) || npu.Text.MinCosine >= npu.Image.MinCosine ||
		!f32.CheckLogitValues || !f16.CheckLogitValues || npu.CheckLogitValues {
		t.Errorf("gates out of order: %+v %+v %+v", f32, f16, npu)
	}
	// bf16 on the CPU: the NPU's cosines (check holds both to the same
	// bars), its size bounds tighter (measured against float32).
	bf := BF16CPU()
	if bf.Image.MinCosine != npu.Image.MinCosine || bf.Text.MinCosine != npu.Text.MinCosine ||
		!(bf.Image.MaxRelErr <= npu.Image.MaxRelErr && bf.Text.MaxRelErr <= npu.Text.MaxRelErr && bf.Image.MaxRelErr > f16.Image.MaxRelErr) {
		t.Errorf("bf16 gates %+v against the NPU's %+v", bf, npu)
	}
}

func TestValues(t *testing.T) {
	want := []float32{0.5, -1, 2, 0}
	s, err := Values([]float32{0.5, -1.25, 2, float32(math.NaN())}, want)
	if err != nil {
		t.Fatal(err)
	}
	if s.Values != 4 || s.Differ != 2 || !math.IsNaN(s.MaxAbsDiff) {
		t.Errorf("%+v, want 2 of 4 differing and a NaN max |diff|", s)
	}
	s, _ = Values([]float32{0.5, -1.25, 2, 0}, want)
	if s.Differ != 1 || s.MaxAbsDiff != 0.25 {
		t.Errorf("%+v, want 1 differing by 0.25", s)
	}
	if s, _ := Values(want, want); s.Differ != 0 || s.MaxAbsDiff != 0 {
		t.Errorf("equal tensors: %+v", s)
	}
	if _, err := Values(want[:3], want); err == nil {
		t.Error("lengths 3 and 4: no error")
	}
}
