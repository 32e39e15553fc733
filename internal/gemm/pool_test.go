package gemm

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSharedLoopsSurviveAStall stalls the first chunk that starts until
// every other index is done: with chunks handed out dynamically the other
// workers finish the loop; with fixed shares (one chunk per worker) they
// would wait for the stalled one forever (the test gives up after 20 s).
func TestSharedLoopsSurviveAStall(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	const n = 100
	loops := map[string]func(fn func(w *Worker, lo, hi int)){
		"Parallel":     func(fn func(w *Worker, lo, hi int)) { p.Parallel(n, func(lo, hi int) { fn(nil, lo, hi) }) },
		"ShareWorkers": func(fn func(w *Worker, lo, hi int)) { p.ShareWorkers(n, fn) },
	}
	for name, loop := range loops {
		t.Run(name, func(t *testing.T) {
			var (
				first     sync.Once
				stallSize atomic.Int64 // indices held by the stalled chunk
				others    atomic.Int64 // indices done by the other chunks
				mu        sync.Mutex
				seen      [n]int
				chunks    int
				busy      [3]atomic.Bool
				overlap   atomic.Bool
			)
			rest := make(chan struct{}) // closed when all but the stalled chunk are done
			loop(func(w *Worker, lo, hi int) {
				if w != nil {
					if busy[w.ID()].Swap(true) {
						overlap.Store(true)
					}
					defer busy[w.ID()].Store(false)
				}
				mu.Lock()
				chunks++
				for i := lo; i < hi; i++ {
					seen[i]++
				}
				mu.Unlock()
				stalled := false
				first.Do(func() { stalled = true; stallSize.Store(int64(hi - lo)) })
				if stalled {
					select {
					case <-rest:
					case <-time.After(20 * time.Second):
						t.Errorf("the other workers did not take the stalled worker's share")
					}
					return
				}
				if others.Add(int64(hi-lo)) == n-stallSize.Load() {
					close(rest)
				}
			})
			for i, s := range seen {
				if s != 1 {
					t.Fatalf("index %d visited %d times", i, s)
				}
			}
			if chunks <= p.Threads() {
				t.Errorf("%d chunks for %d workers: not shared dynamically", chunks, p.Threads())
			}
			if overlap.Load() {
				t.Errorf("a worker ran two chunks at once")
			}
		})
	}
}

// TestSharedLoopsDoNotWaitForSleepers holds worker 1 before it looks for
// work (as if the OS had not scheduled it) until the calls are over:
// products, Parallel and ShareWorkers must finish on the other workers
// instead of waiting for it to check in.
func TestSharedLoopsDoNotWaitForSleepers(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	p := NewPool(3)
	defer p.Close()
	p.wakeHook = func(i int) {
		if i == 1 {
			<-release
		}
	}
	defer once.Do(func() { close(release) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		var sum atomic.Int64
		for range 20 {
			p.Parallel(1000, func(lo, hi int) { sum.Add(int64(hi - lo)) })
			p.ShareWorkers(50, func(w *Worker, lo, hi int) { sum.Add(int64(hi - lo)) })
		}
		if sum.Load() != 20*1050 {
			t.Errorf("covered %d indices, want %d", sum.Load(), 20*1050)
		}
		const m, n, k = 64, 700, 64
		a, b, c := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
		for i := range a {
			a[i] = 1
		}
		for i := range b {
			b[i] = 2
		}
		p.MatMul(c, n, a, k, b, k, m, n, k, true, 1)
		for i, v := range c {
			if v != 2*k {
				t.Errorf("c[%d] = %v, want %v", i, v, 2*k)
				break
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls waited for a worker that never ran")
	}
	once.Do(func() { close(release) })
}

// TestSharedACopy runs products whose A stride the kernels cannot read in
// place (4 KiB aliasing) on several threads: A is copied once, padded, for
// all the chunks (Pool.sharedA), and the results still match SgemmRef.
func TestSharedACopy(t *testing.T) {
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			kr := currentKernel().kr
			for _, k := range []int{1024, 4096, 5120} {
				if directA(kr, k) {
					continue // this kernel reads such rows in place
				}
				p := NewPool(3)
				r := rand.New(rand.NewPCG(7, uint64(k)))
				m, n := 2*kr.mr+3, 300
				a, b := randSlice(r, m*k, 1), randSlice(r, n*k, 2)
				c, want := make([]float32, m*n), make([]float32, m*n)
				SgemmRef(want, n, a, k, b, k, m, n, k, true, 1)
				p.MatMul(c, n, a, k, b, k, m, n, k, true, 1)
				if len(p.apad) == 0 || !directA(kr, p.ldPad) {
					t.Errorf("k=%d: A was not copied to a stride the kernel reads in place (apad %d, ld %d)", k, len(p.apad), p.ldPad)
				}
				compare(t, c, want, m, n, n, n, tolerance(k, maxAbs(a), maxAbs(b)))
				p.Close()
			}
		})
	}
}

// TestLinearStrided checks LinearStrided against LinearRef on dense copies,
// y's elements between rows untouched, and that x kept at Stride(k) is read
// in place: the product makes no padded copy of it.
func TestLinearStrided(t *testing.T) {
	for _, mode := range kernelModes {
		t.Run(mode.name, func(t *testing.T) {
			mode.set(t)
			for _, k := range []int{37, 1024, 5120} {
				ldx := Stride(k)
				if ldx < k || ldx > k+1024 || !directA(currentKernel().kr, ldx) {
					t.Fatalf("Stride(%d) = %d: not a stride ≥ k the kernel reads in place", k, ldx)
				}
				p := NewPool(2)
				r := rand.New(rand.NewPCG(5, uint64(k)))
				m, n := 2*currentKernel().kr.mr+5, 200
				ldy := n + 7
				xd, bias := randSlice(r, m*k, 1), randSlice(r, n, 1)
				w := &Matrix{Rows: n, Cols: k, F32: randSlice(r, n*k, 1)}
				x := make([]float32, (m-1)*ldx+k)
				for i := range m {
					copy(x[i*ldx:i*ldx+k], xd[i*k:(i+1)*k])
				}
				y := make([]float32, m*ldy)
				for i := range y {
					y[i] = -7 // sentinel between rows
				}
				want := make([]float32, m*n)
				LinearRef(want, xd, m, w, bias)
				p.LinearStrided(y, ldy, x, ldx, m, w, bias)
				compare(t, y, want, m, n, ldy, n, tolerance(k, 1, 1)+0x1p-20)
				for i := range m {
					for j := n; j < ldy && i*ldy+j < len(y); j++ {
						if y[i*ldy+j] != -7 {
							t.Fatalf("k=%d: y[%d, %d] beyond the row was written: %v", k, i, j, y[i*ldy+j])
						}
					}
				}
				if len(p.apad) != 0 {
					t.Errorf("k=%d: x at Stride(k)=%d was copied (apad %d elements)", k, ldx, len(p.apad))
				}
				p.Close()
			}
		})
	}
}
