package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
)

// guard is the sentinel around every output; a kernel that writes outside
// its [m, n] window (or into the ldc padding) changes it.
var guard = math.Float32frombits(0x7fc0dead)

// guarded returns a buffer for a [rows, cols] matrix with stride ld, with
// margin guard values before and after, and the window view into it.
func guarded(rows, cols, ld, margin int) (all, view []float32) {
	size := margin * 2
	if rows > 0 {
		size += (rows-1)*ld + cols
	}
	all = make([]float32, size)
	for i := range all {
		all[i] = guard
	}
	return all, all[margin : len(all)-margin]
}

// checkGuards fails if anything outside the [rows, cols] window changed.
func checkGuards(t *testing.T, all []float32, rows, cols, ld, margin int) {
	t.Helper()
	for i, v := range all {
		j := i - margin
		inside := j >= 0 && j < len(all)-2*margin && j%ld < cols && j/ld < rows
		if !inside && math.Float32bits(v) != math.Float32bits(guard) {
			t.Fatalf("guard at offset %d (row %d col %d of stride %d) overwritten with %v", i, j/ld, j%ld, ld, v)
		}
	}
}

func randSlice(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (r.Float32()*2 - 1) * scale
	}
	return s
}

func maxAbs(s []float32) float64 {
	var m float64
	for _, v := range s {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// tolerance is the error bound of a float32 dot product of length k:
// a few ulps per term of k·max|a|·max|b|.
func tolerance(k int, ma, mb float64) float64 {
	return 2 * float64(k+1) * ma * mb * 0x1p-23
}

// compare checks got against want inside the window.
func compare(t *testing.T, got, want []float32, m, n, ldg, ldw int, tol float64) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			g, w := got[i*ldg+j], want[i*ldw+j]
			if d := math.Abs(float64(g) - float64(w)); !(d <= tol) {
				t.Fatalf("c[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", i, j, g, w, d, tol)
			}
		}
	}
}

// setAMode forces how A is read (see aMode) until the test ends.
func setAMode(t *testing.T, m int) {
	old := aMode
	aMode = m
	t.Cleanup(func() { aMode = old })
}

var dims = []int{1, 2, 3, 5, 7, 15, 16, 17, 31, 33}

func TestMatMulSizes(t *testing.T) {
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			p := NewPool(1)
			defer p.Close()
			r := rand.New(rand.NewPCG(1, 2))
			for _, m := range dims {
				for _, n := range dims {
					for _, k := range dims {
						for _, transB := range []bool{false, true} {
							checkMatMul(t, p, r, m, n, k, transB, 1.5)
						}
					}
				}
			}
		})
	}
}

// Shapes crossing the blocking sizes (kc, mcBlock, ncBlock) and the real
// model shapes scaled down, on pools of several threads.
func TestMatMulBlocks(t *testing.T) {
	shapes := []struct{ m, n, k int }{
		{0, 5, 5}, {5, 0, 5}, {5, 5, 0}, // empty products
		{257, 257, 80}, {257, 80, 257}, // attention of one head
		{150, 48, 600}, {20, 1040, 264}, {64, 1100, 33}, {160, 300, 40},
		{103, 320, 256}, {7, 2000, 9}, {300, 17, 520},
		{31, 70, 2600}, // three depth blocks of the AVX-512 kernel
	}
	// lda = k+3 aliases L1 sets: with A handled by stride, one shared
	// padded copy of A (Pool.sharedA).
	aliased := []struct{ m, n, k int }{{20, 300, 1021}, {15, 140, 2045}}
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			for _, threads := range []int{1, 2, 3, 7} {
				p := NewPool(threads)
				r := rand.New(rand.NewPCG(3, uint64(threads)))
				for _, am := range []int{1, 2} { // copy A, read A in place
					setAMode(t, am)
					for _, s := range shapes {
						for _, transB := range []bool{false, true} {
							checkMatMul(t, p, r, s.m, s.n, s.k, transB, -0.125)
						}
					}
				}
				setAMode(t, 0)
				for _, s := range aliased {
					checkMatMul(t, p, r, s.m, s.n, s.k, true, -0.125)
				}
				p.Close()
			}
		})
	}
}

// checkMatMul runs one product with padded leading dimensions and guard
// values, against SgemmRef.
func checkMatMul(t *testing.T, p *Pool, r *rand.Rand, m, n, k int, transB bool, alpha float32) {
	t.Helper()
	lda, ldb, ldc := k+3, n+1, n+5
	brows, bcols := k, n
	if transB {
		ldb, brows, bcols = k+2, n, k
	}
	a := randSlice(r, max(0, (m-1)*lda+k), 1)
	b := randSlice(r, max(0, (brows-1)*ldb+bcols), 2)
	const margin = 37
	all, c := guarded(m, n, ldc, margin)
	want := make([]float32, m*n)
	SgemmRef(want, n, a, lda, b, ldb, m, n, k, transB, alpha)
	p.MatMul(c, ldc, a, lda, b, ldb, m, n, k, transB, alpha)
	name := fmt.Sprintf("m=%d n=%d k=%d transB=%v", m, n, k, transB)
	t.Run(name, func(t *testing.T) {
		checkGuards(t, all, m, n, ldc, margin)
		compare(t, c, want, m, n, ldc, n, tolerance(k, maxAbs(a), maxAbs(b))*math.Abs(float64(alpha)))
	})
}

// randWeights returns an [n, k] matrix of dtype dt with values of roughly
// unit size, including some binary16 subnormals.
func randWeights(r *rand.Rand, n, k int, dt Dtype) *Matrix {
	w := &Matrix{Rows: n, Cols: k, Dtype: dt}
	f := randSlice(r, n*k, 1)
	switch dt {
	case F32:
		w.F32 = f
	case F16:
		w.U16 = make([]uint16, n*k)
		for i := range w.U16 {
			h := uint16(r.Uint32())&0x83ff | uint16(r.IntN(17))<<10 // exponent 0..16: |v| < 2
			w.U16[i] = h
		}
	case BF16:
		w.U16 = make([]uint16, n*k)
		for i, v := range f {
			w.U16[i] = uint16(math.Float32bits(v) >> 16)
		}
	}
	return w
}

func TestLinear(t *testing.T) {
	shapes := []struct{ m, n, k int }{
		{1, 1, 1}, {3, 17, 9}, {7, 33, 31}, {6, 16, 8}, {13, 48, 64},
		{20, 100, 300}, {40, 256, 588}, {30, 1040, 264}, {5, 3, 1000},
		{17, 40, 2700},
	}
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			p := NewPool(2)
			defer p.Close()
			r := rand.New(rand.NewPCG(5, 6))
			for i, dt := range []Dtype{F32, F16, BF16} {
				setAMode(t, i%3) // by stride, copy, in place
				for _, s := range shapes {
					for _, withBias := range []bool{false, true} {
						w := randWeights(r, s.n, s.k, dt)
						x := randSlice(r, s.m*s.k, 1)
						var bias []float32
						if withBias {
							bias = randSlice(r, s.n, 3)
						}
						const margin = 19
						all, y := guarded(s.m, s.n, s.n, margin)
						want := make([]float32, s.m*s.n)
						LinearRef(want, x, s.m, w, bias)
						p.Linear(y, x, s.m, w, bias)
						t.Run(fmt.Sprintf("%v/m=%d,n=%d,k=%d,bias=%v", dt, s.m, s.n, s.k, withBias), func(t *testing.T) {
							checkGuards(t, all, s.m, s.n, s.n, margin)
							compare(t, y, want, s.m, s.n, s.n, s.n, tolerance(s.k, 1, 2)+maxAbs(bias)*0x1p-22)
						})
					}
				}
			}
		})
	}
}

// TestF16ToF32 checks every binary16 pattern against its definition
// (sign · 2^(e-15) · 1.f, or 2^-14 · 0.f for subnormals).
func TestF16ToF32(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got := F16ToF32(uint16(h))
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		e, f := h>>10&0x1f, h&0x3ff
		var want float64
		switch {
		case e == 0x1f && f == 0:
			want = math.Inf(int(sign))
		case e == 0x1f:
			if !math.IsNaN(float64(got)) || math.Float32bits(got)>>13&0x3ff != uint32(f) || math.Signbit(float64(got)) != (sign < 0) {
				t.Fatalf("F16ToF32(%#04x) = %#08x, want NaN with payload %#x", h, math.Float32bits(got), f)
			}
			continue
		case e == 0:
			want = sign * math.Ldexp(float64(f), -24)
		default:
			want = sign * math.Ldexp(float64(f|0x400), e-25)
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign < 0) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
}

// TestPackF16AllPatterns packs every binary16 pattern through Linear's
// packing (the F16C path on amd64) and compares with F16ToF32.
func TestPackF16AllPatterns(t *testing.T) {
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			kr := currentKernel().kr
			n := kr.nr // n rows × k = every pattern once
			k := 1 << 16 / n
			u := make([]uint16, n*k)
			for i := range u {
				u[i] = uint16(i)
			}
			for _, dt := range []Dtype{F16, BF16} {
				g := gemmArgs{b16: u, ldb: k, n: n, k: k}
				g.kind = bF16T
				if dt == BF16 {
					g.kind = bBF16T
				}
				for pc := 0; pc < k; pc += kr.kc {
					kb := min(kr.kc, k-pc)
					dst := make([]float32, kb*kr.nr)
					packPanelT(kr, dst, &g, 0, pc, kb)
					for p := 0; p < kb; p++ {
						for j := 0; j < kr.nr; j++ {
							h := u[j*k+pc+p]
							want := F16ToF32(h)
							if dt == BF16 {
								want = BF16ToF32(h)
							}
							if got := dst[p*kr.nr+j]; math.Float32bits(got) != math.Float32bits(want) &&
								!(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
								t.Fatalf("%v pattern %#04x packed as %#08x, want %#08x", dt, h, math.Float32bits(got), math.Float32bits(want))
							}
						}
					}
				}
			}
		})
	}
}

func TestParallelCoversOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := NewPool(threads)
		if p.Threads() != threads {
			t.Fatalf("Threads() = %d, want %d", p.Threads(), threads)
		}
		for _, n := range []int{0, 1, 3, 7, 100} {
			var mu sync.Mutex
			seen := make([]int, n)
			p.Parallel(n, func(lo, hi int) {
				if lo >= hi {
					t.Errorf("empty chunk [%d,%d)", lo, hi)
				}
				mu.Lock()
				for i := lo; i < hi; i++ {
					seen[i]++
				}
				mu.Unlock()
			})
			ids := map[int]bool{}
			p.ParallelWorkers(n, func(w *Worker, lo, hi int) {
				mu.Lock()
				if ids[w.ID()] {
					t.Errorf("worker %d ran two chunks", w.ID())
				}
				ids[w.ID()] = true
				for i := lo; i < hi; i++ {
					seen[i]++
				}
				mu.Unlock()
			})
			for i, s := range seen {
				if s != 2 {
					t.Fatalf("threads=%d n=%d: index %d visited %d times, want 2", threads, n, i, s)
				}
			}
		}
		p.Close()
		p.Close()
	}
}

// Several goroutines share one pool (calls serialise) while per-head
// products run on the workers of another.
func TestConcurrentUse(t *testing.T) {
	shared := NewPool(2)
	defer shared.Close()
	heads := NewPool(3)
	defer heads.Close()
	r := rand.New(rand.NewPCG(7, 8))
	const m, n, k = 70, 90, 110
	a, b := randSlice(r, m*k, 1), randSlice(r, n*k, 1)
	want := make([]float32, m*n)
	SgemmRef(want, n, a, k, b, k, m, n, k, true, 1)
	tol := tolerance(k, 1, 1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := make([]float32, m*n)
			for range 3 {
				shared.MatMul(c, n, a, k, b, k, m, n, k, true, 1)
				compare(t, c, want, m, n, n, n, tol)
			}
		}()
	}
	const nh = 8
	cs := make([]float32, nh*m*n)
	heads.ParallelWorkers(nh, func(w *Worker, lo, hi int) {
		for h := lo; h < hi; h++ {
			w.MatMul(cs[h*m*n:], n, a, k, b, k, m, n, k, true, 1)
		}
	})
	wg.Wait()
	for h := 0; h < nh; h++ {
		compare(t, cs[h*m*n:], want, m, n, n, n, tol)
	}
}

func TestNoAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	r := rand.New(rand.NewPCG(9, 9))
	const m, n, k = 64, 512, 300
	w := randWeights(r, n, k, BF16)
	x, y, bias := randSlice(r, m*k, 1), make([]float32, m*n), randSlice(r, n, 1)
	p.Linear(y, x, m, w, bias) // allocates the packing buffers once
	if allocs := testing.AllocsPerRun(5, func() { p.Linear(y, x, m, w, bias) }); allocs != 0 {
		t.Errorf("Linear allocates %v times per call in steady state", allocs)
	}
}

func TestShortSlicesPanic(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	cases := map[string]func(){
		"short c": func() {
			p.MatMul(make([]float32, 5), 3, make([]float32, 6), 3, make([]float32, 9), 3, 2, 3, 3, false, 1)
		},
		"small ldc": func() {
			p.MatMul(make([]float32, 9), 2, make([]float32, 9), 3, make([]float32, 9), 3, 3, 3, 3, false, 1)
		},
		"short b": func() {
			p.MatMul(make([]float32, 9), 3, make([]float32, 9), 3, make([]float32, 8), 3, 3, 3, 3, true, 1)
		},
		"short bias": func() {
			p.Linear(make([]float32, 4), make([]float32, 4), 2, &Matrix{Rows: 2, Cols: 2, F32: make([]float32, 4)}, []float32{1})
		},
		"short w16": func() {
			p.Linear(make([]float32, 4), make([]float32, 4), 2, &Matrix{Rows: 2, Cols: 2, Dtype: F16, U16: make([]uint16, 3)}, nil)
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			f()
		})
	}
}

func TestSystemBLAS(t *testing.T) {
	lib, err := LoadBLAS()
	if err != nil {
		if os.Getenv("CI") == "true" && loadCBLAS != nil {
			t.Fatalf("CI installs libopenblas0-pthread (.ci/run), yet: %v", err)
		}
		t.Skipf("no system BLAS (install libopenblas0-pthread to run this test): %v", err)
	}
	t.Logf("using %s", lib.Path())
	r := rand.New(rand.NewPCG(11, 12))
	ours := NewPool(2)
	defer ours.Close()
	sys := NewPool(2)
	defer sys.Close()
	if err := sys.UseSystemBLAS(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ m, n, k int }{{1, 1, 1}, {33, 17, 31}, {257, 257, 80}, {200, 300, 400}} {
		for _, transB := range []bool{false, true} {
			a, b := randSlice(r, s.m*s.k, 1), randSlice(r, s.n*s.k, 1)
			ldb := s.n
			if transB {
				ldb = s.k
			}
			c1, c2 := make([]float32, s.m*s.n), make([]float32, s.m*s.n)
			ours.MatMul(c1, s.n, a, s.k, b, ldb, s.m, s.n, s.k, transB, 0.5)
			lib.Sgemm(c2, s.n, a, s.k, b, ldb, s.m, s.n, s.k, transB, 0.5)
			compare(t, c1, c2, s.m, s.n, s.n, s.n, tolerance(s.k, 1, 1))
		}
		for _, dt := range []Dtype{F32, F16, BF16} {
			w := randWeights(r, s.n, s.k, dt)
			x, bias := randSlice(r, s.m*s.k, 1), randSlice(r, s.n, 1)
			y1, y2 := make([]float32, s.m*s.n), make([]float32, s.m*s.n)
			ours.Linear(y1, x, s.m, w, bias)
			sys.Linear(y2, x, s.m, w, bias)
			compare(t, y1, y2, s.m, s.n, s.n, s.n, tolerance(s.k, 1, 2)+0x1p-20)
		}
	}
}

// FuzzMatMul compares the pool (both kernels on amd64) with SgemmRef on
// arbitrary small shapes, strides and pool sizes.
func FuzzMatMul(f *testing.F) {
	f.Add(uint8(7), uint8(17), uint8(9), uint8(2), true, uint64(1))
	f.Add(uint8(13), uint8(40), uint8(255), uint8(1), false, uint64(2))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(3), true, uint64(3))
	f.Fuzz(func(t *testing.T, m, n, k, threads uint8, transB bool, seed uint64) {
		p := NewPool(int(threads%4) + 1)
		defer p.Close()
		for _, mode := range kernelModes {
			mode.set(t)
			r := rand.New(rand.NewPCG(seed, 0))
			checkMatMul(t, p, r, int(m), int(n), int(k), transB, 0.75)
		}
	})
}

// Every plan cuts C into chunks that cover each element exactly once, with
// chunk edges on tile boundaries and at least one chunk per worker used.
func TestSplitCoversC(t *testing.T) {
	for _, s := range []struct{ m, n, k int }{
		{1028, 1280, 5120}, {1028, 3840, 1280}, {616, 1024, 4096}, {257, 80, 257},
		{257, 257, 80}, {7, 2000, 9}, {300, 17, 520}, {5, 5, 5}, {1, 4096, 64},
	} {
		for _, threads := range []int{2, 3, 4, 7, 16, 64} {
			for _, o := range kernels() {
				g := gemmArgs{m: s.m, n: s.n, k: s.k, lda: s.k, kr: o.kr}
				mr, nr := o.kr.mr, o.kr.nr
				var sp gemmSplit
				sp.plan(&g, threads)
				tiles := ((s.m + mr - 1) / mr) * ((s.n + nr - 1) / nr)
				if sp.chunks < 1 || sp.chunks > maxChunks || sp.chunks < min(threads, tiles, 2) {
					t.Fatalf("%v t=%d %s: %d chunks", s, threads, o.kr.name, sp.chunks)
				}
				seen := make([]uint8, s.m*s.n)
				for i := 0; i < sp.chunks; i++ {
					m0, m1, n0, n1 := sp.region(&g, i)
					if m0%mr != 0 || n0%nr != 0 {
						t.Fatalf("%v t=%d chunk %d starts at (%d,%d), not on a tile", s, threads, i, m0, n0)
					}
					for r := m0; r < m1; r++ {
						for c := n0; c < n1; c++ {
							seen[r*s.n+c]++
						}
					}
				}
				for i, v := range seen {
					if v != 1 {
						t.Fatalf("%v t=%d %s (%d chunks): element (%d,%d) covered %d times", s, threads, o.kr.name, sp.chunks, i/s.n, i%s.n, v)
					}
				}
			}
		}
	}
}

// The grid's last round of column strips is cut into row halves, so the
// workers end a product at most half a strip apart: the image fc1 on 2
// workers makes 8 strips, the last 2 of them halved.
func TestSplitHalvesLastStrips(t *testing.T) {
	for _, o := range kernels() {
		const m, n, k, threads = 1028, 5120, 1280, 2
		g := gemmArgs{m: m, n: n, k: k, lda: k, kr: o.kr}
		var sp gemmSplit
		sp.plan(&g, threads)
		whole := sp.chunks - 2*threads
		if whole < threads {
			t.Fatalf("%s: %d chunks, want at least %d whole strips and %d halves", o.kr.name, sp.chunks, threads, 2*threads)
		}
		for i := 0; i < sp.chunks; i++ {
			m0, m1, n0, n1 := sp.region(&g, i)
			if i < whole {
				if m0 != 0 || m1 != m {
					t.Fatalf("%s: strip %d has rows [%d,%d), want all %d", o.kr.name, i, m0, m1, m)
				}
				continue
			}
			h := (i - whole) % 2
			pm0, pm1, pn0, pn1 := sp.region(&g, i-h) // the first half of the pair
			if m1-m0 > m/2+o.kr.mr || pn0 != n0 || pn1 != n1 || (h == 1 && (m0 != pm1 || m1 != m)) || (h == 0 && m0 != 0) {
				t.Fatalf("%s: chunk %d is rows [%d,%d) × cols [%d,%d), first half [%d,%d)×[%d,%d): not a row half of one strip", o.kr.name, i, m0, m1, n0, n1, pm0, pm1, pn0, pn1)
			}
		}
	}
}

// TestLinearStack checks LinearStack against LinearRef on the matrices
// stacked by rows (copied), for each dtype, with and without bias, on
// pools of 1–3 threads: equal parts of a multiple of 32 rows run as one
// product (each panel of B packed from its own part), the others as one
// product per part into y's columns.
func TestLinearStack(t *testing.T) {
	shapes := []struct {
		m, k int
		rows []int
	}{
		{37, 70, []int{64, 64, 64}}, // one product, 3 parts
		{300, 130, []int{96, 96}},   // one product, parts span chunks
		{29, 33, []int{32}},
		{20, 50, []int{40, 40, 40}}, // parts not on panel boundaries
		{45, 64, []int{64, 16, 96, 32}},
	}
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			for _, threads := range []int{1, 2, 3} {
				p := NewPool(threads)
				r := rand.New(rand.NewPCG(11, uint64(threads)))
				for _, dt := range []Dtype{F32, F16, BF16} {
					for _, s := range shapes {
						ws := make([]*Matrix, len(s.rows))
						all := &Matrix{Cols: s.k, Dtype: dt}
						for i, n := range s.rows {
							ws[i] = randWeights(r, n, s.k, dt)
							all.Rows += n
							all.F32 = append(all.F32, ws[i].F32...)
							all.U16 = append(all.U16, ws[i].U16...)
						}
						n := all.Rows
						x := randSlice(r, s.m*s.k, 1)
						for _, withBias := range []bool{false, true} {
							var bias []float32
							if withBias {
								bias = randSlice(r, n, 3)
							}
							const margin = 13
							buf, y := guarded(s.m, n, n, margin)
							want := make([]float32, s.m*n)
							LinearRef(want, x, s.m, all, bias)
							p.LinearStack(y, x, s.m, ws, bias)
							t.Run(fmt.Sprintf("t=%d/%v/m=%d,k=%d,rows=%v,bias=%v", threads, dt, s.m, s.k, s.rows, withBias), func(t *testing.T) {
								checkGuards(t, buf, s.m, n, n, margin)
								compare(t, y, want, s.m, n, n, n, tolerance(s.k, 1, 2)+maxAbs(bias)*0x1p-22)
							})
						}
					}
				}
				p.Close()
			}
		})
	}
}

func TestLinearStackNoAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	r := rand.New(rand.NewPCG(9, 10))
	const m, n, k = 64, 256, 300
	ws := []*Matrix{randWeights(r, n, k, F32), randWeights(r, n, k, F32), randWeights(r, n, k, F32)}
	x, y, bias := randSlice(r, m*k, 1), make([]float32, 3*m*n), randSlice(r, 3*n, 1)
	p.LinearStack(y, x, m, ws, bias)
	if allocs := testing.AllocsPerRun(5, func() { p.LinearStack(y, x, m, ws, bias) }); allocs != 0 {
		t.Errorf("LinearStack allocates %v times per call in steady state", allocs)
	}
}
