package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/viterin/vek/vek32"
)

// attentionRef is fastCPU.attention as it was before attention.go: the full
// [L, L] scores, a four-call vek softmax per row (max, subtract, exp, scale
// by 1/Σ) and the whole [L, L]·[L, d] second product, also under the
// causal mask. BenchmarkAttention times it against attention.
func (f *fastCPU) attentionRef(t *fastTower, ctx, q, k, v []float32, ld, n int) {
	T, H, A := t.T, t.H, t.A
	d := H / A
	scale := float32(1 / math.Sqrt(float64(d)))
	f.pool.ShareWorkers(n*A, func(w *gemm.Worker, lo, hi int) {
		s := t.scores[w.ID()*T*T : (w.ID()+1)*T*T]
		for i := lo; i < hi; i++ {
			b, a := i/A, i%A
			L, in, off := t.lens[b], t.off[b]*ld+a*d, t.off[b]*H+a*d
			w.MatMul(s, L, q[in:], ld, k[in:], ld, L, L, d, true, scale)
			for r := 0; r < L; r++ {
				row := s[r*L : (r+1)*L]
				if t.causal {
					softmaxRef(row[:r+1])
					clear(row[r+1:])
				} else {
					softmaxRef(row)
				}
			}
			w.MatMul(ctx[off:], H, s, L, v[in:], ld, L, d, L, false, 1)
		}
	})
}

// softmaxRef is the softmax attentionRef ran (fastSoftmax at the time).
func softmaxRef(row []float32) {
	m := vek32.Max(row)
	vek32.AddNumber_Inplace(row, -m)
	vek32.Exp_Inplace(row)
	vek32.MulNumber_Inplace(row, 1/vek32.Sum(row))
}

// attnCase is one attention workload: n sequences of lens tokens (at most
// T), A heads of width d, causal or not, q, k and v side by side in one
// [R, 3H] buffer as layer lays them out.
type attnCase struct {
	name   string
	T, A   int
	d      int
	causal bool
	lens   []int
}

// attnBenchCases are ViT-H/14's two towers: a pass of 4 images (257
// tokens, 16 heads of 80) and a pass of 8 prompts (16 heads of 64, causal),
// all 77 tokens long or of mixed lengths up to their EOS.
var attnBenchCases = []attnCase{
	{name: "image", T: 257, A: 16, d: 80, lens: []int{257, 257, 257, 257}},
	{name: "text77", T: 77, A: 16, d: 64, causal: true, lens: []int{77, 77, 77, 77, 77, 77, 77, 77}},
	{name: "textmix", T: 77, A: 16, d: 64, causal: true, lens: []int{77, 61, 40, 29, 17, 12, 9, 6}},
}

// attnSetup is a case's tower (only what attention reads) and its q, k, v
// buffer filled with random values.
func attnSetup(c attnCase, workers int, seed uint64) (t *fastTower, qkv []float32) {
	H := c.A * c.d
	t = &fastTower{T: c.T, H: H, A: c.A, causal: c.causal}
	n := len(c.lens)
	t.off, t.lens = make([]int, n), make([]int, n)
	R := 0
	for b, L := range c.lens {
		t.off[b], t.lens[b] = R, L
		R += L
	}
	t.rows = R
	t.scores = make([]float32, workers*c.T*scoreStride(c.T))
	rng := rand.New(rand.NewPCG(seed, 7))
	qkv = make([]float32, R*3*H)
	for i := range qkv {
		qkv[i] = float32(rng.NormFloat64() * 1.5)
	}
	return t, qkv
}

// BenchmarkAttention times attention against attentionRef on a 2-thread
// pool, interleaved: each iteration runs both (in alternating order) on the
// same inputs. It reports the median of the per-iteration ratios new/old
// with their range, and each side's median time per call. Use a fixed
// count, e.g.
//
//	go test ./clipnpu/cpu -run '^$' -bench Attention -benchtime 60x
func BenchmarkAttention(b *testing.B) {
	const threads = 2
	benchKernels(b, threads)
	for _, c := range attnBenchCases {
		b.Run(c.name, func(b *testing.B) {
			f := &fastCPU{pool: gemm.NewPool(threads)}
			defer f.pool.Close()
			t, qkv := attnSetup(c, threads, 1)
			H := t.H
			ctx := make([]float32, t.rows*H)
			n := len(c.lens)
			run := func(ref bool) time.Duration {
				start := time.Now()
				if ref {
					f.attentionRef(t, ctx, qkv, qkv[H:], qkv[2*H:], 3*H, n)
				} else {
					f.attention(t, ctx, qkv, qkv[H:], qkv[2*H:], 3*H, n)
				}
				return time.Since(start)
			}
			run(true) // warm the workers' packing buffers
			run(false)
			var ratios, olds, news []float64
			i := 0
			for b.Loop() {
				var o, nw time.Duration
				if i%2 == 0 {
					o, nw = run(true), run(false)
				} else {
					nw, o = run(false), run(true)
				}
				i++
				ratios = append(ratios, nw.Seconds()/o.Seconds())
				olds = append(olds, o.Seconds())
				news = append(news, nw.Seconds())
			}
			b.ReportMetric(medianOf(ratios), "new/old")
			b.ReportMetric(slices.Min(ratios), "min-ratio")
			b.ReportMetric(slices.Max(ratios), "max-ratio")
			b.ReportMetric(medianOf(olds)*1e3, "old-ms")
			b.ReportMetric(medianOf(news)*1e3, "new-ms")
		})
	}
}

// BenchmarkAttentionNew times attention alone (for profiles).
func BenchmarkAttentionNew(b *testing.B) {
	benchKernels(b, 2)
	for _, c := range attnBenchCases {
		b.Run(c.name, func(b *testing.B) {
			f := &fastCPU{pool: gemm.NewPool(2)}
			defer f.pool.Close()
			t, qkv := attnSetup(c, 2, 1)
			H := t.H
			ctx := make([]float32, t.rows*H)
			for b.Loop() {
				f.attention(t, ctx, qkv, qkv[H:], qkv[2*H:], 3*H, len(c.lens))
			}
		})
	}
}

// benchKernels applies the GEMM kernels clipidx's commands would run on
// this CPU at this many threads, chosen by measurement (afresh, nothing
// kept), rather than the package's unmeasured default (AVX2 on AMD, where
// the chooser picks AVX-512 on Zen 5: an image layer's attention 8.1-9.0 ms
// against 4.9 ms).
func benchKernels(b *testing.B, threads int) {
	c, err := gemm.Choose(gemm.ChooseOptions{Threads: threads})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { gemm.SetKernel(""); gemm.SetBF16Kernel("") })
	b.Logf("kernels chosen by measurement: %s", c.Summary(gemm.ContestF32))
}

// medianOf is the median of x (x is reordered).
func medianOf(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	slices.Sort(x)
	if len(x)%2 == 1 {
		return x[len(x)/2]
	}
	return (x[len(x)/2-1] + x[len(x)/2]) / 2
}

// BenchmarkSoftmaxExp times the row softmax on score-like rows of an
// image head (257 keys) and a prompt's last row (77): softmaxExp (the
// assembly where available), softmaxExpGo and softmaxRef (the previous
// softmax, with its division), each on a fresh copy of 64 rows.
func BenchmarkSoftmaxExp(b *testing.B) {
	for _, n := range []int{257, 77} {
		rng := rand.New(rand.NewPCG(1, 2))
		const rows = 64
		src := make([]float32, rows*n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 3)
		}
		x := make([]float32, len(src))
		for _, impl := range []struct {
			name string
			fn   func([]float32)
		}{
			{"softmaxExp", func(r []float32) { softmaxExp(r) }},
			{"softmaxExpGo", func(r []float32) { softmaxExpGo(r) }},
			{"softmaxRef", softmaxRef},
		} {
			b.Run(fmt.Sprintf("%s/%d", impl.name, n), func(b *testing.B) {
				b.SetBytes(4 * int64(len(src)))
				for b.Loop() {
					copy(x, src)
					for r := 0; r < rows; r++ {
						impl.fn(x[r*n : (r+1)*n])
					}
				}
			})
		}
	}
}
