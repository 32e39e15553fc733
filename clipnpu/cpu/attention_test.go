package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clipidx/clipidx/internal/gemm"
)

// attention64 is the attention of every (sequence, head) pair of t in
// float64, written out plainly: ctx [R, H] from q, k, v with row stride ld.
func attention64(t *fastTower, q, k, v []float32, ld int) []float64 {
	H, A := t.H, t.A
	d := H / A
	scale := 1 / math.Sqrt(float64(d))
	ctx := make([]float64, t.rows*H)
	for b := range t.lens {
		L, o := t.lens[b], t.off[b]
		for a := 0; a < A; a++ {
			for r := 0; r < L; r++ {
				keys := L
				if t.causal {
					keys = r + 1
				}
				p := make([]float64, keys)
				best := math.Inf(-1)
				for j := range p {
					var dot float64
					for e := 0; e < d; e++ {
						dot += float64(q[(o+r)*ld+a*d+e]) * float64(k[(o+j)*ld+a*d+e])
					}
					p[j] = dot * scale
					best = math.Max(best, p[j])
				}
				var sum float64
				for j := range p {
					p[j] = math.Exp(p[j] - best)
					sum += p[j]
				}
				for e := 0; e < d; e++ {
					var acc float64
					for j := range p {
						acc += p[j] * float64(v[(o+j)*ld+a*d+e])
					}
					ctx[(o+r)*H+a*d+e] = acc / sum
				}
			}
		}
	}
	return ctx
}

// TestAttention compares fastCPU.attention (and the previous
// implementation, attentionRef) with attention64 on image-like heads (no
// mask, ViT-H/14's 257 tokens of width 80 among them), causal text-like
// heads of ragged lengths (1 and 2 tokens, around 14, 28 and 56: the
// kernels' row slabs), and heads longer than attnMaxRows (whose score rows
// are scaled instead of the context), in both layouts layer uses: q, k, v
// side by side in one [R, 3H] buffer (ld = 3H) and in three [R, H]
// buffers (ld = H). ctx starts as NaN, so a value left unwritten fails.
func TestAttention(t *testing.T) {
	cases := []attnCase{
		{name: "image-like", T: 37, A: 2, d: 16, lens: []int{37, 37, 37}},
		{name: "unmasked ragged", T: 40, A: 3, d: 8, lens: []int{40, 1, 13, 29}},
		{name: "ViT-H image", T: 257, A: 2, d: 80, lens: []int{257}},
		{name: "text-like causal", T: 61, A: 2, d: 16, causal: true,
			lens: []int{61, 1, 2, 27, 28, 29, 55, 56, 57, 15}},
		{name: "ViT-H text", T: 77, A: 2, d: 64, causal: true, lens: []int{77, 30, 6}},
		// Longer than attnMaxRows: the score rows are scaled instead.
		{name: "long unmasked", T: 520, A: 1, d: 8, lens: []int{520}},
		{name: "long causal", T: 515, A: 1, d: 8, causal: true, lens: []int{515, 3}},
	}
	const tol = 2e-6 // max |got - want| / max |want|
	for _, c := range cases {
		for _, split := range []bool{false, true} {
			tw, qkv := attnSetup(c, 2, 3)
			H := tw.H
			q, k, v, ld := qkv, qkv[H:], qkv[2*H:], 3*H
			if split { // three [R, H] buffers
				R := tw.rows
				q, k, v = make([]float32, R*H), make([]float32, R*H), make([]float32, R*H)
				for r := 0; r < R; r++ {
					copy(q[r*H:(r+1)*H], qkv[r*3*H:])
					copy(k[r*H:(r+1)*H], qkv[r*3*H+H:])
					copy(v[r*H:(r+1)*H], qkv[r*3*H+2*H:])
				}
				ld = H
			}
			want := attention64(tw, q, k, v, ld)
			f := &fastCPU{pool: gemm.NewPool(2)}
			for _, ref := range []bool{false, true} {
				ctx := make([]float32, tw.rows*H)
				for i := range ctx {
					ctx[i] = float32(math.NaN())
				}
				if ref {
					f.attentionRef(tw, ctx, q, k, v, ld, len(c.lens))
				} else {
					f.attention(tw, ctx, q, k, v, ld, len(c.lens))
				}
				d := maxRelDiff(ctx, want)
				t.Logf("%s (ld=%d) ref=%v: max rel diff %.3g", c.name, ld, ref, d)
				if !(d <= tol) { // NaN fails too
					t.Errorf("%s (ld=%d) ref=%v: max |attention - float64| / max |float64| = %.3g, want <= %g", c.name, ld, ref, d, tol)
				}
			}
			f.pool.Close()
		}
	}
}

// TestSoftmaxExp checks softmaxExp (the AVX-512 assembly where the CPU has
// it) and softmaxExpGo against float64 on every length up to 70 (the
// 32- and 16-lane bodies and the masked tails) and some longer rows, with
// guard values after the row: each value within 4e-7 relative of
// exp(x - max) (4e-6 for vek's exp in softmaxExpGo), or below 2e-38 where
// that is smaller (both stop at e^-87, clear of subnormals and of vek's
// wrong results below -88), the sum within 1e-6.
func TestSoftmaxExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	lens := []int{}
	for n := 1; n <= 70; n++ {
		lens = append(lens, n)
	}
	lens = append(lens, 76, 77, 255, 256, 257, 1000)
	for _, impl := range []struct {
		name string
		fn   func([]float32) float32
		tol  float64 // relative, per value
	}{{"softmaxExp", softmaxExp, 4e-6}, {"softmaxExpGo", softmaxExpGo, 4e-6}} {
		if impl.name == "softmaxExp" && attnAVX512 {
			impl.tol = 4e-7
		}
		for _, n := range lens {
			buf := make([]float32, n+3)
			for i := range buf[:n] {
				buf[i] = float32(rng.NormFloat64() * 6)
			}
			if n > 3 {
				buf[1], buf[2] = buf[0]-90, buf[0]-300 // underflow, clamp
			}
			buf[n], buf[n+1], buf[n+2] = 7, 7, 7 // guards
			x := append([]float32(nil), buf[:n]...)
			best := x[0]
			for _, v := range x {
				best = max(best, v)
			}
			// exp of the float32 differences, as both implementations
			// round them: the test is of exp and the sum.
			var want float64
			for _, v := range x {
				want += math.Exp(float64(v - best))
			}
			got := impl.fn(buf[:n])
			if d := math.Abs(float64(got)-want) / want; !(d <= 1e-6) {
				t.Errorf("%s n=%d: sum %g, want %g (rel diff %.3g)", impl.name, n, got, want, d)
			}
			for i, v := range x {
				e := math.Exp(float64(v - best))
				if d := math.Abs(float64(buf[i]) - e); !(d <= impl.tol*e || (e < 2e-38 && buf[i] >= 0 && buf[i] < 2e-38)) {
					t.Errorf("%s n=%d: [%d] = %g, want exp(%g) = %g", impl.name, n, i, buf[i], v-best, e)
				}
			}
			if buf[n] != 7 || buf[n+1] != 7 || buf[n+2] != 7 {
				t.Errorf("%s n=%d: guard values overwritten: %v", impl.name, n, buf[n:])
			}
		}
	}
}

// TestFastSoftmaxWideRange: rows whose values span more than exp's range
// (scores 90-300 below the max) give probabilities, matching float64
// within 1e-6 of the largest. vek's exp alone returned -1.1e34 for
// exp(-99), which turned such rows into garbage.
func TestFastSoftmaxWideRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for _, n := range []int{2, 9, 16, 33, 77, 257} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()*3) - float32(i%4)*100 // 0, -100, -200, -300
		}
		got := append([]float32(nil), x...)
		fastSoftmax(got)
		want := make([]float64, n)
		best := x[0]
		for _, v := range x {
			best = max(best, v)
		}
		var sum float64
		for i, v := range x {
			want[i] = math.Exp(float64(v - best))
			sum += want[i]
		}
		for i := range want {
			want[i] /= sum
		}
		if d := maxRelDiff(got, want); !(d <= 1e-6) {
			t.Errorf("n=%d: max rel diff %.3g: got %v", n, d, got[:min(n, 8)])
		}
	}
}
