package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
)

func TestFastErf(t *testing.T) {
	worst, at := 0.0, 0.0
	for i := -500000; i <= 500000; i++ {
		x := float32(i) * 1e-5 // [-5, 5]
		if d := math.Abs(float64(fastErf(x)) - math.Erf(float64(x))); d > worst {
			worst, at = d, float64(x)
		}
	}
	if worst > 4e-7 {
		t.Fatalf("max |fastErf - math.Erf| = %.3g at x = %g, want <= 4e-7", worst, at)
	}
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 1e30, -1e30} {
		if got, want := fastErf(x), float32(math.Copysign(1, float64(x))); got != want {
			t.Errorf("fastErf(%g) = %g, want %g", x, got, want)
		}
	}
}

// rowOps64 are float64 transcriptions of the row operations.
func layerNorm64(x, w, b []float32, eps float64) []float64 {
	var mean, v float64
	for _, e := range x {
		mean += float64(e)
	}
	mean /= float64(len(x))
	for _, e := range x {
		v += (float64(e) - mean) * (float64(e) - mean)
	}
	v /= float64(len(x))
	out := make([]float64, len(x))
	for i, e := range x {
		out[i] = (float64(e)-mean)/math.Sqrt(v+eps)*float64(w[i]) + float64(b[i])
	}
	return out
}

// maxRelDiff is max|got - want| relative to max|want| (elementwise relative
// error is meaningless where GELU's negative tail cancels to ~0).
func maxRelDiff(got []float32, want []float64) float64 {
	worst, scale := 0.0, 0.0
	for i := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	return worst / scale
}

func TestFastRowOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 16, 77, 257, 1280, 1283} {
		x := make([]float32, n)
		w := make([]float32, n)
		b := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()*3 + 5) // an offset mean tests the centring
			w[i] = float32(1 + 0.1*rng.NormFloat64())
			b[i] = float32(0.1 * rng.NormFloat64())
		}
		if n > 1 {
			y := make([]float32, n)
			fastLayerNorm(y, x, w, b, 1e-5)
			if d := maxRelDiff(y, layerNorm64(x, w, b, 1e-5)); d > 1e-6 {
				t.Errorf("layerNorm n=%d: max rel diff %.3g", n, d)
			}
			in := append([]float32(nil), x...)
			fastLayerNorm(in, in, w, b, 1e-5) // in place
			if d := maxRelDiff(in, layerNorm64(x, w, b, 1e-5)); d > 1e-6 {
				t.Errorf("layerNorm in place n=%d: max rel diff %.3g", n, d)
			}
		}
		s := append([]float32(nil), x...)
		fastSoftmax(s)
		if d := maxRelDiff(s, core.Softmax(x)); d > 1e-6 {
			t.Errorf("softmax n=%d: max rel diff %.3g", n, d)
		}
		g := append([]float32(nil), x...)
		for i := range g {
			g[i] -= 5
		}
		want := make([]float64, n)
		for i, e := range g {
			want[i] = 0.5 * float64(e) * (1 + math.Erf(float64(e)/math.Sqrt2))
		}
		fastGELU(g)
		if d := maxRelDiff(g, want); d > 1e-6 {
			t.Errorf("gelu n=%d: max rel diff %.3g", n, d)
		}
		qg := append([]float32(nil), x...)
		for i := range qg {
			qg[i] -= 5
			want[i] = float64(qg[i]) / (1 + math.Exp(-1.702*float64(qg[i])))
		}
		fastQuickGELU(qg, make([]float32, n))
		if d := maxRelDiff(qg, want); d > 1e-6 {
			t.Errorf("quick_gelu n=%d: max rel diff %.3g", n, d)
		}
	}
}

func TestFastPoolIndex(t *testing.T) {
	tests := []struct {
		name string
		seq  []int32
		eos  int32
		want int
	}{
		{"first eos", []int32{49406, 5, 49407, 49407}, 49407, 2},
		{"no eos", []int32{49406, 5, 6}, 49407, 0},
		{"eos at 0", []int32{49407, 5, 49407}, 49407, 0},
		{"legacy argmax", []int32{49406, 5, 49407, 0}, 2, 2},
		{"legacy first max", []int32{3, 9, 9, 1}, 2, 1},
	}
	for _, tc := range tests {
		if got := fastPoolIndex(tc.seq, tc.eos); got != tc.want {
			t.Errorf("%s: fastPoolIndex = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func BenchmarkFastGELU(b *testing.B) {
	x := make([]float32, 5120)
	for i := range x {
		x[i] = float32(i%200)/20 - 5
	}
	src := append([]float32(nil), x...)
	b.SetBytes(4 * int64(len(x)))
	for b.Loop() {
		copy(x, src) // repeated GELU would drift into subnormals
		fastGELU(x)
	}
}

// TestFastGELUPaths compares fastGELU (assembly where available) with the
// plain Go loop on every length up to 40 (the 8-lane body and the tails),
// with guard values after the slice.
func TestFastGELUPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 40; n++ {
		buf := make([]float32, n+3)
		for i := range buf {
			buf[i] = float32(rng.NormFloat64() * 4)
		}
		buf[n], buf[n+1], buf[n+2] = 7, 7, 7 // guards
		if n > 2 {
			buf[0], buf[1], buf[2] = 20, -20, 0
		}
		want := append([]float32(nil), buf[:n]...)
		fastGELUGo(want)
		got := buf[:n]
		fastGELU(got)
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*math.Max(1, math.Abs(float64(want[i]))) {
				t.Errorf("n=%d: fastGELU[%d] = %g, Go %g", n, i, got[i], want[i])
			}
		}
		if buf[n] != 7 || buf[n+1] != 7 || buf[n+2] != 7 {
			t.Errorf("n=%d: guard values overwritten: %v", n, buf[n:])
		}
	}
}

func BenchmarkFastGELUGo(b *testing.B) {
	x := make([]float32, 5120)
	for i := range x {
		x[i] = float32(i%200)/20 - 5
	}
	src := append([]float32(nil), x...)
	b.SetBytes(4 * int64(len(x)))
	for b.Loop() {
		copy(x, src) // repeated GELU would drift into subnormals
		fastGELUGo(x)
	}
}
