package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// sameBits fails t unless got and want are bit-identical.
func sameBits(t *testing.T, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("element %d: %v, want %v (bit-identical)", i, got[i], want[i])
		}
	}
}

// packedCopy returns a copy of w's header packed by p, with its elements
// dropped, as the CPU forward holds a packed matrix.
func packedCopy(t *testing.T, p *Pool, w *Matrix) *Matrix {
	t.Helper()
	c := *w
	if !p.Pack(&c) || !c.Packed() {
		t.Fatalf("Pack of a [%d, %d] %v matrix did not pack it", w.Rows, w.Cols, w.Dtype)
	}
	c.F32, c.U16 = nil, nil
	return &c
}

// TestPack checks that products with a packed matrix read its panels in
// place and give bit for bit what the same product gives unpacked, on
// every kernel, for every weight dtype, on shapes crossing the tile and
// the depth blocks, on one and several workers, with row strides.
func TestPack(t *testing.T) {
	shapes := []struct{ m, n, k int }{
		{1, 1, 1}, {3, 17, 9}, {7, 33, 31}, {14, 32, 16}, {13, 48, 64}, {29, 31, 33},
		{20, 100, 300}, {40, 70, 600}, {30, 1090, 264}, {200, 64, 1100},
		{23, 40, 2700}, // three depth blocks of the AVX-512 kernel
	}
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			for _, threads := range []int{1, 2} {
				p := NewPool(threads)
				r := rand.New(rand.NewPCG(21, uint64(threads)))
				for _, dt := range []Dtype{F32, F16, BF16} {
					for _, s := range shapes {
						w := randWeights(r, s.n, s.k, dt)
						pw := packedCopy(t, p, w)
						if g := linearArgs(nil, nil, 0, pw, nil); !g.inPlace(currentKernel().kr) {
							t.Fatalf("%v [%d, %d]: a product would not read the packed panels in place", dt, s.n, s.k)
						}
						ldx, ldy := s.k+3, s.n+5
						x := randSlice(r, s.m*ldx, 1)
						bias := randSlice(r, s.n, 2)
						want := make([]float32, s.m*ldy)
						p.LinearStrided(want, ldy, x, ldx, s.m, w, bias)
						const margin = 7
						all, got := guarded(s.m, s.n, ldy, margin)
						p.LinearStrided(got, ldy, x, ldx, s.m, pw, bias)
						t.Run(fmt.Sprintf("t=%d/%v/m=%d,n=%d,k=%d", threads, dt, s.m, s.n, s.k), func(t *testing.T) {
							checkGuards(t, all, s.m, s.n, ldy, margin)
							for i := 0; i < s.m; i++ {
								sameBits(t, got[i*ldy:i*ldy+s.n], want[i*ldy:i*ldy+s.n])
							}
						})
					}
				}
				p.Close()
			}
		})
	}
}

// TestPackOtherKernel checks a matrix packed for one kernel and used after
// the kernel was changed: products unpack it block by block and give what
// the new kernel gives unpacked; Pack then repacks it for the new kernel.
func TestPackOtherKernel(t *testing.T) {
	var names []string // the kernels this CPU and build run
	for _, name := range []string{"avx512", "avx2", "neon", "go"} {
		t.Run("probe-"+name, func(t *testing.T) {
			useKernel(t, name) // skips when unavailable
			names = append(names, name)
		})
	}
	if len(names) < 2 {
		t.Skipf("only %v runs here: no other kernel to switch to", names)
	}
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			t.Run(from+"-then-"+to, func(t *testing.T) {
				useKernel(t, from)
				p := NewPool(2)
				defer p.Close()
				r := rand.New(rand.NewPCG(22, 23))
				m, n, k := 37, 90, 530
				w := randWeights(r, n, k, F32)
				pw := packedCopy(t, p, w)
				useKernel(t, to)
				if g := linearArgs(nil, nil, 0, pw, nil); g.inPlace(currentKernel().kr) {
					t.Fatal("panels packed for another kernel would be read in place")
				}
				x, bias := randSlice(r, m*k, 1), randSlice(r, n, 1)
				want, got := make([]float32, m*n), make([]float32, m*n)
				p.Linear(want, x, m, w, bias)
				p.Linear(got, x, m, pw, bias)
				sameBits(t, got, want)
				if !p.Pack(pw) {
					t.Fatal("repacking for the new kernel failed")
				}
				if g := linearArgs(nil, nil, 0, pw, nil); !g.inPlace(currentKernel().kr) {
					t.Fatal("a repacked matrix is not read in place")
				}
				clear(got)
				p.Linear(got, x, m, pw, bias)
				sameBits(t, got, want)
			})
		}
	}
}

// TestPackStack checks LinearStack with packed parts: all packed (one
// product reading each part's panels), and packed and unpacked mixed.
func TestPackStack(t *testing.T) {
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			p := NewPool(2)
			defer p.Close()
			r := rand.New(rand.NewPCG(24, 25))
			m, k := 45, 300
			ws := []*Matrix{randWeights(r, 64, k, F32), randWeights(r, 64, k, F32), randWeights(r, 64, k, F32)}
			bias := randSlice(r, 192, 1)
			x := randSlice(r, m*k, 1)
			want := make([]float32, m*192)
			p.LinearStack(want, x, m, ws, bias)
			all := []*Matrix{packedCopy(t, p, ws[0]), packedCopy(t, p, ws[1]), packedCopy(t, p, ws[2])}
			mixed := []*Matrix{ws[0], all[1], ws[2]}
			for name, parts := range map[string][]*Matrix{"all": all, "mixed": mixed} {
				got := make([]float32, m*192)
				p.LinearStack(got, x, m, parts, bias)
				t.Run(name, func(t *testing.T) { sameBits(t, got, want) })
			}
		})
	}
}

// TestPackSystemBLAS checks that a pool on the system BLAS does not pack,
// and runs a matrix packed by one of ours from its packed copy.
func TestPackSystemBLAS(t *testing.T) {
	if _, err := LoadBLAS(); err != nil {
		if os.Getenv("CI") == "true" && loadCBLAS != nil {
			t.Fatalf("CI installs libopenblas0-pthread (.ci/run), yet: %v", err)
		}
		t.Skipf("no system BLAS (install libopenblas0-pthread to run this test): %v", err)
	}
	sys := NewPool(1)
	defer sys.Close()
	if err := sys.UseSystemBLAS(); err != nil {
		t.Fatal(err)
	}
	ours := NewPool(1)
	defer ours.Close()
	r := rand.New(rand.NewPCG(26, 27))
	m, n, k := 9, 70, 300
	w := randWeights(r, n, k, F32)
	if c := *w; sys.Pack(&c) || c.Packed() {
		t.Fatal("a system-BLAS pool packed a matrix")
	}
	pw := packedCopy(t, ours, w)
	x := randSlice(r, m*k, 1)
	want, got := make([]float32, m*n), make([]float32, m*n)
	LinearRef(want, x, m, w, nil)
	sys.Linear(got, x, m, pw, nil)
	compare(t, got, want, m, n, n, n, tolerance(k, 1, 1))
}
