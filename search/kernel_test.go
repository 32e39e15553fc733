package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// forEachKernel runs fn as a subtest with each scan kernel selected; the
// ones this CPU (or build) lacks are skipped, naming what is missing.
func forEachKernel(t *testing.T, fn func(t *testing.T, k kernelKind)) {
	has := map[kernelKind]bool{}
	for _, k := range kernels() {
		has[k] = true
	}
	need := map[kernelKind]string{
		kernelAVX2:   "AVX2 and FMA",
		kernelAVX512: "AVX-512 (AVX512F and AVX512BW)",
		kernelBF16:   "AVX512_BF16 (with AVX512F and AVX512BW)",
	}
	for _, k := range []kernelKind{kernelGo, kernelAVX2, kernelAVX512, kernelBF16} {
		t.Run(k.String(), func(t *testing.T) {
			if !has[k] {
				t.Skipf("this CPU or build lacks %s (amd64 assembly, no purego tag)", need[k])
			}
			old := kernel
			kernel = k
			t.Cleanup(func() { kernel = old })
			fn(t, k)
		})
	}
}

// kernelTolerance bounds |kernel - exact| for products whose absolute
// values sum to abs: float32 accumulation over chains of at most n/8+4
// additions (plus slack), and the query's bfloat16 split for kernelBF16.
func kernelTolerance(k kernelKind, n int, abs float64) float64 {
	tol := float64(n/8+8) * 0x1p-24 * abs
	if k == kernelBF16 {
		tol += 1.01 * 0x1p-16 * abs
	}
	return tol
}

// bf16Rows returns rows vectors of n bfloat16 values back to back,
// followed by guard values (+Inf), and the values as float64. Every value
// has magnitude in [1, 2), so a missed or doubled element moves the sum
// by far more than the tolerance.
func bf16Rows(r *rand.Rand, rows, n, guard int) ([]byte, [][]float64) {
	hi := make([]byte, 2*(rows*n+guard))
	vals := make([][]float64, rows)
	for i := range rows * n {
		f := float32(1+r.Float64()) * float32(1-2*r.IntN(2))
		h := roundBF16(f)
		hi[2*i], hi[2*i+1] = byte(h), byte(h>>8)
		vals[i/n] = append(vals[i/n], float64(math.Float32frombits(uint32(h)<<16)))
	}
	for i := rows * n; i < rows*n+guard; i++ {
		hi[2*i], hi[2*i+1] = 0x80, 0x7f // +Inf: a read turns the sum into Inf or NaN
	}
	return hi, vals
}

// signedQuery is n random float32s of magnitude in [1, 2) with all 24
// significand bits in use (so the low bfloat16 half matters).
func signedQuery(r *rand.Rand, n int) []float32 {
	q := make([]float32, n)
	for i := range q {
		q[i] = float32(1+r.Float64()) * float32(1-2*r.IntN(2))
	}
	return q
}

func TestKernelsMatchGeneric(t *testing.T) {
	lengths := []int{512, 768, 1024, 1025, 1055}
	for n := 1; n <= 80; n++ {
		lengths = append(lengths, n)
	}
	forEachKernel(t, func(t *testing.T, k kernelKind) {
		r := rand.New(rand.NewPCG(8, 8))
		for _, n := range lengths {
			for _, rows := range []int{1, 3, 4, 5, 8, 9, 11} {
				q := signedQuery(r, n)
				hi, vals := bf16Rows(r, rows, n, 40)
				// out sits between guards that must stay untouched.
				buf := make([]float32, rows+2)
				buf[0], buf[rows+1] = 12345, -12345
				out := buf[1 : rows+1 : rows+1]
				newHiQuery(q).scoreRows(hi[:2*rows*n], out)
				if buf[0] != 12345 || buf[rows+1] != -12345 {
					t.Fatalf("n=%d rows=%d: scoreRows wrote outside out: %v", n, rows, buf)
				}
				for i := range rows {
					var want, abs float64
					for j, v := range vals[i] {
						want += float64(q[j]) * v
						abs += math.Abs(float64(q[j]) * v)
					}
					row := hi[2*i*n : 2*(i+1)*n]
					gen := dotHiGeneric(row, q)
					one := dotHi(row, q)
					tk, tg := kernelTolerance(k, n, abs), kernelTolerance(kernelGo, n, abs)
					switch {
					case !(math.Abs(float64(out[i])-want) <= tk): // NaN fails too
						t.Fatalf("n=%d rows=%d row %d: scoreRows %g, exact %g (tolerance %g)", n, rows, i, out[i], want, tk)
					case !(math.Abs(float64(one)-want) <= tk):
						t.Fatalf("n=%d row %d: dotHi %g, exact %g (tolerance %g)", n, i, one, want, tk)
					case !(math.Abs(float64(gen)-want) <= tg):
						t.Fatalf("n=%d row %d: dotHiGeneric %g, exact %g (tolerance %g)", n, i, gen, want, tg)
					case !(math.Abs(float64(out[i]-gen)) <= tk+tg):
						t.Fatalf("n=%d row %d: scoreRows %g, dotHiGeneric %g", n, i, out[i], gen)
					}
				}
			}
		}
	})
}

// TestKernelsShortInput: a row slice shorter than rows·n is refused with a
// panic (the bounds check the assembly relies on), never read past.
func TestKernelsShortInput(t *testing.T) {
	forEachKernel(t, func(t *testing.T, k kernelKind) {
		q := make([]float32, 40)
		defer func() {
			if recover() == nil {
				t.Error("scoreRows read a short slice without panicking")
			}
		}()
		newHiQuery(q).scoreRows(make([]byte, 2*40*3-2), make([]float32, 3))
	})
}

func TestKernelDispatch(t *testing.T) {
	ks := kernels()
	if ks[0] != kernelGo {
		t.Fatalf("kernels() = %v, want the Go kernel first", ks)
	}
	for i := 1; i < len(ks); i++ {
		if ks[i] <= ks[i-1] {
			t.Fatalf("kernels() = %v, not slowest first", ks)
		}
	}
	if kernel != defaultKernel() || kernel == kernelBF16 || (kernel == kernelGo) != (len(ks) == 1) {
		t.Errorf("kernel = %v (default %v) from %v", kernel, defaultKernel(), ks)
	}
	if h := newHiQuery(make([]float32, 5)); h.kernel != kernel || (h.kernel == kernelBF16) != (h.qh != nil) {
		t.Errorf("newHiQuery: kernel %v, split %v; current kernel %v", h.kernel, h.qh != nil, kernel)
	}
}

func TestSplitBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	x := signedQuery(r, 1000)
	x = append(x, 0, 1e-30, -3e20, 0x1p-126)
	qh, ql := splitBF16(x)
	if len(qh) != 1024 || len(ql) != 1024 {
		t.Fatalf("halves of %d and %d values, want both padded to 1024", len(qh), len(ql))
	}
	for i, v := range x {
		got := float64(math.Float32frombits(uint32(qh[i])<<16)) + float64(math.Float32frombits(uint32(ql[i])<<16))
		if d := math.Abs(got - float64(v)); d > 0x1p-16*math.Abs(float64(v)) {
			t.Errorf("x=%g: qh+ql=%g, off by %g", v, got, d)
		}
	}
	for i := len(x); i < len(qh); i++ {
		if qh[i] != 0 || ql[i] != 0 {
			t.Fatalf("padding %d not zero", i)
		}
	}
	// Nearest even: 1 + 2⁻⁸ is half way between 1 and 1 + 2⁻⁷.
	if got := roundBF16(1 + 0x1p-8); got != 0x3f80 {
		t.Errorf("roundBF16(1+2⁻⁸) = %#x, want 0x3f80 (ties to even)", got)
	}
	if got := roundBF16(1 + 0x1p-8 + 0x1p-20); got != 0x3f81 {
		t.Errorf("roundBF16(1+2⁻⁸+2⁻²⁰) = %#x, want 0x3f81", got)
	}
}

// TestErrorBoundHoldsEveryKernel is TestErrorBoundHolds for each kernel.
func TestErrorBoundHoldsEveryKernel(t *testing.T) {
	forEachKernel(t, func(t *testing.T, k kernelKind) {
		r := rand.New(rand.NewPCG(6, 7))
		for _, dim := range []int{512, 768, 1024} {
			const rows = 64
			hi := make([]byte, 2*dim*rows)
			vs := make([][]float32, rows)
			for range 20 {
				q, _ := unit(randVec(r, dim, 1))
				for i := range rows {
					v, _ := unit(randVec(r, dim, 1))
					if i%2 == 0 { // close to q, where the errors align
						for j := range v {
							v[j] = q[j] + 0.001*v[j]
						}
						v, _ = unit(v)
					}
					vs[i] = v
					for j := range v {
						h, _ := store.Split(v[j])
						hi[2*(i*dim+j)], hi[2*(i*dim+j)+1] = byte(h), byte(h>>8)
					}
				}
				out := make([]float32, rows)
				newHiQuery(q).scoreRows(hi, out)
				for i := range rows {
					if d := math.Abs(float64(out[i] - dot32(q, vs[i]))); d > errorBound(1, dim) {
						t.Fatalf("dim %d: |approx-exact| = %g over bound %g", dim, d, errorBound(1, dim))
					}
				}
			}
		}
	})
}

// TestSearchEveryKernel is TestSearchMatchesExhaustiveFloat32 with each
// kernel, in dimensions with and without a tail: the 16-bit scan plus the
// exact re-rank must give the exhaustive float32 top k exactly.
func TestSearchEveryKernel(t *testing.T) {
	for _, dim := range []int{64, 100} {
		path := fill(t, 2000, dim, 17)
		forEachKernel(t, func(t *testing.T, k kernelKind) {
			r := rand.New(rand.NewPCG(4, uint64(dim)))
			within(t, path, func(s *store.Snapshot) {
				for qi := range 12 {
					q := testQuery(r, s, dim, qi)
					for _, kk := range []int{1, 10, 57} {
						want := reference(s, q, kk)
						got, err := Search(s, q, Options{K: kk, Threads: 2})
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("dim %d query %d k=%d:\n got %v\nwant %v", dim, qi, kk, got, want)
						}
					}
				}
			})
		})
	}
}
