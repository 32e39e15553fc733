package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// bf16Kernels are the kernels SetBF16Kernel accepts by name; "go" runs
// everywhere, the others only on CPUs (and builds) that have them.
var bf16Kernels = []string{"go", "avx512bf16", "amx"}

// useBF16Kernel forces a kernel until the test ends, skipping the test with
// the reason when this CPU or build cannot run it.
func useBF16Kernel(t testing.TB, name string) {
	t.Helper()
	if err := SetBF16Kernel(name); err != nil {
		t.Skipf("bf16 kernel %s not tested: %v", name, err)
	}
	t.Cleanup(func() { SetBF16Kernel("") })
}

// roundBF16Oracle rounds f to bfloat16 by comparing the two neighbouring
// bfloat16 values in float64: independent of RoundBF16's bit trick.
func roundBF16Oracle(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	if math.IsInf(float64(f), 0) {
		return uint16(u >> 16)
	}
	lo := uint16(u >> 16) // truncation: toward zero
	hi := lo + 1          // away from zero (may become infinity: fine)
	dl := math.Abs(float64(f) - float64(BF16ToF32(lo)))
	dh := math.Abs(float64(BF16ToF32(hi)) - float64(f))
	if math.IsInf(float64(BF16ToF32(hi)), 0) {
		// Overflow rounds to infinity at or beyond the midpoint 0x7f7f8000.
		if u&0x7fffffff >= 0x7f7f8000 {
			return hi
		}
		return lo
	}
	switch {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestRoundBF16(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
		what string
	}{
		{0x3f800000, 0x3f80, "one"},
		{0x3f808000, 0x3f80, "tie, even below"},
		{0x3f818000, 0x3f82, "tie, odd below rounds up"},
		{0x3f808001, 0x3f81, "just above the tie"},
		{0x3f807fff, 0x3f80, "just below the tie"},
		{0xbf818000, 0xbf82, "negative tie rounds to even magnitude"},
		{0x7f800000, 0x7f80, "+inf"},
		{0xff800000, 0xff80, "-inf"},
		{0x7f7fffff, 0x7f80, "largest float32 rounds to inf"},
		{0x7f7f7fff, 0x7f7f, "largest bf16 stays"},
		{0x7f800001, 0x7fc0, "signalling NaN becomes quiet"},
		{0xffc12345, 0xffc1, "negative quiet NaN keeps sign and payload"},
		{0x7fff0000, 0x7fff, "NaN that would carry into the sign"},
		{0x00000000, 0x0000, "+0"},
		{0x80000000, 0x8000, "-0"},
		{0x00008000, 0x0000, "subnormal tie to even zero"},
		{0x00018000, 0x0002, "subnormal tie up to even"},
		{0x00017fff, 0x0001, "subnormal below the tie"},
		{0x007fffff, 0x0080, "largest subnormal rounds to the smallest normal"},
		{0x80008001, 0x8001, "negative subnormal above the tie"},
	}
	for _, c := range cases {
		f := math.Float32frombits(c.in)
		if got := RoundBF16(f); got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#04x, want %#04x (%s)", c.in, got, c.want, c.what)
		}
		if got := roundBF16Oracle(f); got != c.want {
			t.Errorf("oracle(%#08x) = %#04x, want %#04x (%s): the oracle is wrong", c.in, got, c.want, c.what)
		}
	}
	// Every upper half with the lower halves that matter (0, tie-1, tie,
	// tie+1, max), then random patterns.
	r := rand.New(rand.NewPCG(3, 4))
	check := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := RoundBF16(f), roundBF16Oracle(f); got != want {
			t.Fatalf("RoundBF16(%#08x) = %#04x, want %#04x", u, got, want)
		}
	}
	for hi := range uint32(1 << 16) {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff} {
			check(hi<<16 | lo)
		}
	}
	for range 1 << 20 {
		check(r.Uint32())
	}
}

// TestRoundBF16Slice checks the packer's (vector) rounding against
// RoundBF16 on every length up to 70 and on all special values.
func TestRoundBF16Slice(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	specials := []uint32{0x3f808000, 0x3f818000, 0x7f800001, 0xffc12345, 0x7f7fffff, 0x00018000, 0x80008001, 0x7fff0000, 0xff800000}
	for n := range 71 {
		src := make([]float32, n)
		for i := range src {
			u := r.Uint32()
			if i%3 == 0 {
				u = specials[r.IntN(len(specials))]
			}
			src[i] = math.Float32frombits(u)
		}
		dst := make([]uint16, n+2)
		dst[n], dst[n+1] = 0xdead, 0xbeef
		roundBF16Slice(dst[:n], src)
		for i, f := range src {
			if want := RoundBF16(f); dst[i] != want {
				t.Fatalf("n=%d: element %d (%#08x) rounded to %#04x, want %#04x", n, i, math.Float32bits(f), dst[i], want)
			}
		}
		if dst[n] != 0xdead || dst[n+1] != 0xbeef {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

// TestRoundBF16Tiled checks the rounding into a row of AMX A tiles (32
// values a tile, 512 elements apart) against RoundBF16 on every length up
// to 100, and that every other element keeps its sentinel.
func TestRoundBF16Tiled(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for n := range 101 {
		src := make([]float32, n)
		for i := range src {
			src[i] = math.Float32frombits(r.Uint32())
		}
		dst := make([]uint16, (n+31)/32*512+600)
		for i := range dst {
			dst[i] = 0xdead
		}
		roundBF16Tiled(dst, src)
		want := make([]uint16, len(dst))
		for i := range want {
			want[i] = 0xdead
		}
		for q, f := range src {
			want[q/32*512+q%32] = RoundBF16(f)
		}
		for i := range dst {
			if dst[i] != want[i] {
				t.Fatalf("n=%d: element %d is %#04x, want %#04x", n, i, dst[i], want[i])
			}
		}
	}
}

func TestPackBF16Errors(t *testing.T) {
	bad := []*Matrix{
		nil,
		{Rows: -1, Cols: 2},
		{Rows: 2, Cols: 3, Dtype: F32, F32: make([]float32, 5)},
		{Rows: 2, Cols: 3, Dtype: F16, U16: make([]uint16, 5)},
		{Rows: 1, Cols: 1, Dtype: Dtype(9), U16: make([]uint16, 1)},
	}
	for i, w := range bad {
		if p, err := PackBF16(w); err == nil {
			t.Errorf("case %d: PackBF16 = %+v, want an error", i, p)
		}
	}
}

// bf16Abs holds |x| and |w| rounded to bf16 (and |bias|), for tol.
type bf16Abs struct {
	x, w, bias []float64
	k          int
}

func newBF16Abs(x []float32, w *Matrix, bias []float32) *bf16Abs {
	a := &bf16Abs{x: make([]float64, len(x)), w: make([]float64, w.Rows*w.Cols), k: w.Cols}
	for i, v := range x {
		a.x[i] = math.Abs(float64(BF16ToF32(RoundBF16(v))))
	}
	for i := range a.w {
		var v float32
		switch w.Dtype {
		case F32:
			v = BF16ToF32(RoundBF16(w.F32[i]))
		case F16:
			v = BF16ToF32(RoundBF16(F16ToF32(w.U16[i])))
		case BF16:
			v = BF16ToF32(w.U16[i])
		}
		a.w[i] = math.Abs(float64(v))
	}
	for _, v := range bias {
		a.bias = append(a.bias, math.Abs(float64(v)))
	}
	return a
}

// tol bounds |got - want| for y[i, j] from two float32 summations of the
// same exact products (a bf16·bf16 product is exact in float32) in possibly
// different orders: each is within k·u·S of the exact sum (u = 2⁻²⁴, S =
// |bias| + Σ|products|), so they are within 2·(k+1)·u·S of each other.
func (a *bf16Abs) tol(i, j int) float64 {
	s := 0.0
	if a.bias != nil {
		s = a.bias[j]
	}
	xs, ws := a.x[i*a.k:(i+1)*a.k], a.w[j*a.k:(j+1)*a.k]
	for p, v := range xs {
		s += v * ws[p]
	}
	return 2 * float64(a.k+1) * 0x1p-24 * s
}

// checkBF16 compares got [m, n] with the reference, within abs.tol, and
// the guards around it, returning the first difference.
func checkBF16(all, got, want []float32, abs *bf16Abs, m, n, margin int) error {
	for i := range m {
		for j := range n {
			g, r := got[i*n+j], want[i*n+j]
			if d, tol := math.Abs(float64(g)-float64(r)), abs.tol(i, j); !(d <= tol) {
				return fmt.Errorf("y[%d,%d] = %v, reference %v (|diff| %.3g > tol %.3g)", i, j, g, r, d, tol)
			}
		}
	}
	for i, v := range all {
		if (i < margin || i >= margin+m*n) && math.Float32bits(v) != 0x7fc0dead {
			return fmt.Errorf("guard at offset %d (y has %d elements from offset %d) overwritten with %v", i, m*n, margin, v)
		}
	}
	return nil
}

func bf16Guarded(size, margin int) (all, view []float32) {
	all = make([]float32, size+2*margin)
	for i := range all {
		all[i] = math.Float32frombits(0x7fc0dead)
	}
	return all, all[margin : margin+size]
}

// TestLinearBF16Sizes runs every kernel this CPU has against LinearBF16Ref
// for every m, n, k in 1..33 and each weight dtype, with guards around y.
func TestLinearBF16Sizes(t *testing.T) {
	const top = 33
	for _, name := range bf16Kernels {
		t.Run(name, func(t *testing.T) {
			useBF16Kernel(t, name)
			if testing.Short() && name == "go" {
				t.Skip("the go kernel's full sweep is slow; -short")
			}
			r := rand.New(rand.NewPCG(1, 2))
			for _, dt := range []Dtype{F32, F16, BF16} {
				for n := 1; n <= top; n++ {
					for k := 1; k <= top; k++ {
						w := bf16RandWeights(r, n, k, dt)
						pw, err := PackBF16(w)
						if err != nil {
							t.Fatal(err)
						}
						x := bf16RandSlice(r, top*k, 1)
						bias := bf16RandSlice(r, n, 2)
						abs, absNil := newBF16Abs(x, w, bias), newBF16Abs(x, w, nil)
						for m := 1; m <= top; m++ {
							b, ab := bias, abs
							if m%2 == 0 {
								b, ab = nil, absNil
							}
							want := make([]float32, m*n)
							LinearBF16Ref(want, x, m, w, b)
							const margin = 17
							all, y := bf16Guarded(m*n, margin)
							var wk Worker
							wk.LinearBF16(y, x, m, pw, b)
							if err := checkBF16(all, y, want, ab, m, n, margin); err != nil {
								t.Fatalf("%v weights, m=%d n=%d k=%d bias=%v: %v", dt, m, n, k, b != nil, err)
							}
						}
					}
				}
			}
		})
	}
}

// TestLinearBF16Blocks covers what small sizes do not: several depth and
// column blocks, edges in both directions, and the pool's column chunks.
// It also proves the comparison is not vacuous: the bf16 results differ
// from float32 arithmetic by far more than the tolerance.
func TestLinearBF16Blocks(t *testing.T) {
	shapes := []struct{ m, n, k int }{
		{70, 1100, 1100}, {64, 1024, 1024}, {33, 300, 4400}, {130, 96, 588}, {5, 2000, 40},
	}
	p := NewPool(2)
	defer p.Close()
	for _, name := range bf16Kernels {
		t.Run(name, func(t *testing.T) {
			useBF16Kernel(t, name)
			r := rand.New(rand.NewPCG(9, 9))
			for i, s := range shapes {
				dt := []Dtype{F32, F16, BF16}[i%3]
				w := bf16RandWeights(r, s.n, s.k, dt)
				pw, err := PackBF16(w)
				if err != nil {
					t.Fatal(err)
				}
				x := bf16RandSlice(r, s.m*s.k, 1)
				bias := bf16RandSlice(r, s.n, 2)
				want := make([]float32, s.m*s.n)
				LinearBF16Ref(want, x, s.m, w, bias)
				const margin = 33
				all, y := bf16Guarded(s.m*s.n, margin)
				p.LinearBF16(y, x, s.m, pw, bias)
				if err := checkBF16(all, y, want, newBF16Abs(x, w, bias), s.m, s.n, margin); err != nil {
					t.Fatalf("%v weights, %+v: %v", dt, s, err)
				}
				// float32 arithmetic must be measurably further away than
				// the bf16 reference is.
				exact := make([]float32, s.m*s.n)
				LinearRef(exact, x, s.m, w, bias)
				var dRef, dF32 float64
				for i := range exact {
					dRef = max(dRef, math.Abs(float64(want[i])-float64(y[i])))
					dF32 = max(dF32, math.Abs(float64(exact[i])-float64(y[i])))
				}
				t.Logf("%v weights, %+v: max |diff| to the bf16 reference %.3g, to float32 %.3g", dt, s, dRef, dF32)
				if dF32 < 20*dRef {
					t.Errorf("%+v: results as close to float32 arithmetic (%.3g) as to the bf16 reference (%.3g): is x rounded to bf16?", s, dF32, dRef)
				}
			}
		})
	}
}

// TestLinearBF16Concurrent runs products from many goroutines at once with
// the garbage collector busy: tile or register state leaking between calls
// (goroutines move between threads), or two products sharing a pool's
// packed-A buffer, would corrupt results.
func TestLinearBF16Concurrent(t *testing.T) {
	for _, name := range bf16Kernels[1:] {
		t.Run(name, func(t *testing.T) {
			useBF16Kernel(t, name)
			r := rand.New(rand.NewPCG(2, 3))
			const m, n, k = 40, 96, 200
			w := bf16RandWeights(r, n, k, F32)
			pw, _ := PackBF16(w)
			// Odd iterations share one pool (and its packed-A buffer).
			shared := NewPool(2)
			defer shared.Close()
			var wg sync.WaitGroup
			errs := make(chan string, 8)
			for g := range 8 {
				x := bf16RandSlice(r, m*k, float32(g+1))
				want := make([]float32, m*n)
				LinearBF16Ref(want, x, m, w, nil)
				abs := newBF16Abs(x, w, nil)
				wg.Go(func() {
					y := make([]float32, m*n)
					for it := range 100 {
						if it%2 == 1 {
							shared.LinearBF16(y, x, m, pw, nil)
						} else {
							var wk Worker
							wk.LinearBF16(y, x, m, pw, nil)
						}
						for i := range y {
							if d := math.Abs(float64(y[i] - want[i])); d > abs.tol(i/n, i%n) {
								errs <- fmt.Sprintf("goroutine %d, iteration %d: y[%d] = %v, want %v", g, it, i, y[i], want[i])
								return
							}
						}
						if it%50 == 0 {
							runtime.GC()
						}
						runtime.Gosched()
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

func TestLinearBF16ZeroDepth(t *testing.T) {
	pw, err := PackBF16(&Matrix{Rows: 3, Cols: 0})
	if err != nil {
		t.Fatal(err)
	}
	y := []float32{9, 9, 9, 9, 9, 9}
	var wk Worker
	wk.LinearBF16(y, nil, 2, pw, []float32{1, 2, 3})
	want := []float32{1, 2, 3, 1, 2, 3}
	for i := range y {
		if y[i] != want[i] {
			t.Fatalf("y = %v, want %v", y, want)
		}
	}
}

func TestSetBF16Kernel(t *testing.T) {
	if err := SetBF16Kernel("sse2"); err == nil {
		t.Error("SetBF16Kernel(sse2) succeeded")
	}
	defer SetBF16Kernel("")
	if err := SetBF16Kernel("go"); err != nil {
		t.Fatal(err)
	}
	if name, err := BF16Kernel(); err != nil || name != bf16GoImpl.name {
		t.Errorf("after SetBF16Kernel(go): BF16Kernel() = %q, %v", name, err)
	}
	SetBF16Kernel("")
	name, err := BF16Kernel()
	_, errAMX := bf16AMX()
	_, errAVX := bf16AVX512()
	switch {
	case errAMX == nil && name != "AMX-BF16 tiles":
		t.Errorf("AMX available, BF16Kernel() = %q, %v", name, err)
	case errAMX != nil && errAVX == nil && name != "AVX512_BF16 VDPBF16PS":
		t.Errorf("AVX512_BF16 available, BF16Kernel() = %q, %v", name, err)
	case errAMX != nil && errAVX != nil && err == nil:
		t.Errorf("no bf16 kernel, BF16Kernel() = %q without an error", name)
	}
	t.Logf("BF16Kernel() = %q, %v", name, err)
}

func bf16RandSlice(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (r.Float32()*2 - 1) * scale
	}
	return s
}

// bf16RandWeights returns [n, k] weights of dtype dt of roughly unit size;
// binary16 weights include subnormals (normal numbers in bfloat16).
func bf16RandWeights(r *rand.Rand, n, k int, dt Dtype) *Matrix {
	w := &Matrix{Rows: n, Cols: k, Dtype: dt}
	switch dt {
	case F32:
		w.F32 = bf16RandSlice(r, n*k, 1)
	case F16:
		w.U16 = make([]uint16, n*k)
		for i := range w.U16 {
			w.U16[i] = uint16(r.Uint32())&0x83ff | uint16(r.IntN(17))<<10
		}
	case BF16:
		w.U16 = make([]uint16, n*k)
		for i := range w.U16 {
			w.U16[i] = RoundBF16(r.Float32()*2 - 1)
		}
	}
	return w
}

// TestStackBF16 checks that a stack of PackBF16Group's parts computes
// exactly (bit for bit) what one LinearBF16 per part does, on every kernel
// and with depths beyond one block, that it outlives the parts it views,
// and that StackBF16 refuses what it cannot view as one matrix.
func TestStackBF16(t *testing.T) {
	for _, name := range bf16Kernels {
		t.Run(name, func(t *testing.T) {
			useBF16Kernel(t, name)
			r := rand.New(rand.NewPCG(3, 4))
			for _, k := range []int{48, 80, 2*bf16KC + 40} {
				rows := []int{64, 32, 96}
				ws := make([]*Matrix, len(rows))
				for i, n := range rows {
					ws[i] = bf16RandWeights(r, n, k, F32)
				}
				ps, err := PackBF16Group(ws...)
				if err != nil {
					t.Fatal(err)
				}
				stack := StackBF16(ps...)
				if stack == nil || stack.Rows != 192 || stack.Cols != k {
					t.Fatalf("k=%d: StackBF16 of a group = %+v, want a [192, %d] view", k, stack, k)
				}
				const m = 29
				x := bf16RandSlice(r, m*k, 1)
				bias := bf16RandSlice(r, 192, 2)
				want := make([]float32, m*192)
				col := 0
				for i, p := range ps {
					y := make([]float32, m*p.Rows)
					var wk Worker
					wk.LinearBF16(y, x, m, p, bias[col:col+p.Rows])
					for row := range m {
						copy(want[row*192+col:], y[row*p.Rows:(row+1)*p.Rows])
					}
					col += rows[i]
				}
				ps = nil // the stack alone keeps the memory mapped
				runtime.GC()
				runtime.GC()
				got := make([]float32, m*192)
				var wk Worker
				wk.LinearBF16(got, x, m, stack, bias)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("k=%d: stacked y[%d] = %v, one product per part %v", k, i, got[i], want[i])
					}
				}
			}
			// What cannot be one matrix.
			w64, w48 := bf16RandWeights(r, 64, 40, F32), bf16RandWeights(r, 48, 40, F32)
			w64b := bf16RandWeights(r, 64, 72, F32)
			group := func(ws ...*Matrix) []*PackedBF16 {
				ps, err := PackBF16Group(ws...)
				if err != nil {
					t.Fatal(err)
				}
				return ps
			}
			g := group(w64, w64, w64)
			for _, c := range []struct {
				name string
				ps   []*PackedBF16
			}{
				{"out of order", []*PackedBF16{g[1], g[0]}},
				{"not adjacent", []*PackedBF16{g[0], g[2]}},
				{"rows not a multiple of 32", group(w48, w64)},
				{"different columns", group(w64, w64b)},
				{"nil part", []*PackedBF16{g[0], nil}},
				{"none", nil},
			} {
				if s := StackBF16(c.ps...); s != nil {
					t.Errorf("%s: StackBF16 = [%d, %d], want nil", c.name, s.Rows, s.Cols)
				}
			}
		})
	}
}
