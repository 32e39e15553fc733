package cpu

// Row operations of the fast forward: LayerNorm, softmax and the two
// activations, each on one contiguous row (or run of rows) so the caller can
// split rows across the pool's workers. vek's AVX2 kernels do the
// element-wise work where one exists; erf has none, so exact GELU uses the
// rational approximation below (|error| < 4e-7 against math.Erf).

import (
	"math"

	"github.com/viterin/vek/vek32"
)

// fastLayerNorm writes (src - mean)/sqrt(var + eps)·w + b into dst (dst may be
// src); all have the same length H.
func fastLayerNorm(dst, src, w, b []float32, eps float32) {
	H := float32(len(src))
	mean := vek32.Sum(src) / H
	if sameSlice(dst, src) { // vek refuses overlapping _Into arguments
		vek32.AddNumber_Inplace(dst, -mean)
	} else {
		vek32.AddNumber_Into(dst, src, -mean)
	}
	variance := vek32.Dot(dst, dst) / H
	rstd := float32(1 / math.Sqrt(float64(variance+eps)))
	vek32.MulNumber_Inplace(dst, rstd)
	vek32.Mul_Inplace(dst, w)
	vek32.Add_Inplace(dst, b)
}

// sameSlice reports whether a and b start at the same element.
func sameSlice(a, b []float32) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// fastAdd writes a + b into dst; dst may be a (but not b).
func fastAdd(dst, a, b []float32) {
	if sameSlice(dst, a) {
		vek32.Add_Inplace(dst, b)
	} else {
		vek32.Add_Into(dst, a, b)
	}
}

// fastSoftmax replaces row by exp(row - max)/Σ in place (softmaxExp,
// attention.go, then the division). row is not empty.
func fastSoftmax(row []float32) {
	vek32.MulNumber_Inplace(row, 1/softmaxExp(row))
}

// fastQuickGELU is x·σ(1.702x) in place; aux is scratch of at least len(x).
func fastQuickGELU(x, aux []float32) {
	a := aux[:len(x)]
	vek32.MulNumber_Into(a, x, -1.702)
	vek32.Exp_Inplace(a)
	vek32.AddNumber_Inplace(a, 1)
	vek32.Div_Inplace(x, a)
}

// fastGELUGo is the exact GELU, x·(1 + erf(x/√2))/2, in place, in plain
// Go; fastGELU (cpu_fast_amd64.go, cpu_fast_generic.go) runs the same
// arithmetic eight lanes at a time where AVX2 is available.
func fastGELUGo(x []float32) {
	for i, v := range x {
		x[i] = 0.5 * v * (1 + fastErf(v*math.Sqrt2/2))
	}
}

// fastErf approximates erf(x) as x·P(x²)/Q(x²) on |x| ≤ 4 (erf(±4) rounds
// to ±1 in float32). The coefficients are a weighted least-squares rational
// fit of erf(x)/x in s = x² on [0, 16] made for this package; the float32
// evaluation stays within 4e-7 of math.Erf (TestErf32).
func fastErf(x float32) float32 {
	if x > 4 {
		x = 4
	} else if x < -4 {
		x = -4
	}
	s := x * x
	p := ((((erfP5*s+erfP4)*s+erfP3)*s+erfP2)*s+erfP1)*s + erfP0
	q := ((((erfQ5*s+erfQ4)*s+erfQ3)*s+erfQ2)*s+erfQ1)*s + 1
	r := x * p / q
	if r > 1 {
		return 1
	} else if r < -1 {
		return -1
	}
	return r
}

const (
	erfP0 = 1.1283789766461911
	erfP1 = 0.19624595803505612
	erfP2 = 0.05346714484642925
	erfP3 = 0.004003534391448581
	erfP4 = 0.00028804180097019577
	erfP5 = 1.974890561339106e-06
	erfQ1 = 0.5072496122066529
	erfQ2 = 0.11647523683989622
	erfQ3 = 0.01544419707373358
	erfQ4 = 0.0012163382451648493
	erfQ5 = 3.748151022553043e-05
)
