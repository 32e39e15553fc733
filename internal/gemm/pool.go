package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a set of persistent workers, each owning its packing buffers, that
// split every product (and any other loop given to Parallel) across threads.
// The caller's goroutine acts as worker 0, so a Pool of one thread starts no
// goroutine. A Pool runs one call at a time: concurrent calls from several
// goroutines are serialised; calls from inside a Parallel callback would
// deadlock (use the Worker passed to ParallelWorkers instead).
type Pool struct {
	mu      sync.Mutex
	workers []*Worker
	start   []chan struct{} // start[i] wakes worker i (i ≥ 1)
	wg      sync.WaitGroup
	closed  bool

	// The current task, read by the workers between start and wg.Done.
	kind  taskKind
	n     int
	fn    func(lo, hi int)
	wfn   func(w *Worker, lo, hi int)
	g     *gemmArgs // &cur while a product runs
	cur   gemmArgs
	split gemmSplit
}

// Worker is one thread of a Pool with its own packing buffers. It is handed
// to ParallelWorkers callbacks, whose products it runs single-threaded.
type Worker struct {
	id    int
	apack []float32 // A block, [mcBlock rounded to mr, kcPad]
	bpack []float32 // B block, [ncBlock/nr panels][kc][nr]
	tmp   [mr * nr]float32
	sys   *sysBLAS // non-nil after Pool.UseSystemBLAS
}

// ID returns the worker's index in [0, Threads()).
func (w *Worker) ID() int { return w.id }

type taskKind uint8

const (
	taskFunc taskKind = iota
	taskWorkerFunc
	taskGemm
)

// NewPool starts a pool of threads workers (0 or less means
// runtime.NumCPU()). Close it to stop the goroutines.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{workers: make([]*Worker, threads), start: make([]chan struct{}, threads)}
	for i := range p.workers {
		p.workers[i] = &Worker{id: i}
	}
	for i := 1; i < threads; i++ {
		p.start[i] = make(chan struct{})
		go p.loop(i)
	}
	return p
}

// Threads returns the number of workers.
func (p *Pool) Threads() int { return len(p.workers) }

// Close stops the workers. The pool must not be used afterwards; Close is
// idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, c := range p.start[1:] {
		close(c)
	}
}

func (p *Pool) loop(i int) {
	w := p.workers[i]
	for range p.start[i] {
		p.runShare(w)
		p.wg.Done()
	}
}

// Parallel splits [0, n) into at most Threads() contiguous chunks and calls
// fn(lo, hi) for each, concurrently, returning when all are done. Chunks are
// never empty.
func (p *Pool) Parallel(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.n, p.fn = taskFunc, n, fn
	p.dispatch(min(n, len(p.workers)))
	p.fn = nil
}

// ParallelWorkers is Parallel with the worker running each chunk, so the
// callback can run single-threaded products on the worker's buffers
// (w.MatMul, w.Linear), e.g. one attention head per index.
func (p *Pool) ParallelWorkers(n int, fn func(w *Worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.n, p.wfn = taskWorkerFunc, n, fn
	p.dispatch(min(n, len(p.workers)))
	p.wfn = nil
}

// dispatch runs the current task on workers [0, t), the caller being worker 0.
func (p *Pool) dispatch(t int) {
	if p.closed {
		panic("gemm: use of closed Pool")
	}
	p.split.t = t
	p.wg.Add(t - 1)
	for i := 1; i < t; i++ {
		p.start[i] <- struct{}{}
	}
	p.runShare(p.workers[0])
	p.wg.Wait()
}

func (p *Pool) runShare(w *Worker) {
	t := p.split.t
	switch p.kind {
	case taskFunc, taskWorkerFunc:
		lo, hi := w.id*p.n/t, (w.id+1)*p.n/t
		if lo == hi {
			return
		}
		if p.kind == taskFunc {
			p.fn(lo, hi)
		} else {
			p.wfn(w, lo, hi)
		}
	case taskGemm:
		for {
			i := int(p.split.next.Add(1) - 1)
			if i >= p.split.chunks {
				return
			}
			m0, m1, n0, n1 := p.split.region(p.g, i)
			w.gemmRegion(p.g, m0, m1, n0, n1)
		}
	}
}

// gemmSplit cuts C into a grid of rg × cg chunks that the workers take in
// turn (a worker slowed down by other load on the machine simply takes
// fewer). Column groups are preferred: each chunk packs the part of B under
// it and copies the part of A beside it, so cutting C into rg row groups
// packs B rg times and cg column groups copy A cg times.
type gemmSplit struct {
	t      int
	rg, cg int // row and column groups
	chunks int
	next   atomic.Int64
}

// plan chooses the grid for t workers.
func (s *gemmSplit) plan(g *gemmArgs, t int) {
	panels, slabs := (g.n+nr-1)/nr, (g.m+mr-1)/mr
	minCols := minChunkCols
	if !directA(g.lda) {
		minCols = minChunkColsCopy // every chunk copies its rows of A
	}
	cgMax := max(1, min(panels, g.n/minCols))
	switch {
	case cgMax >= t:
		// Columns only, a multiple of t chunks so that equal speeds give
		// equal shares.
		s.rg, s.cg = 1, min(chunksPerWorker, cgMax/t)*t
	case cgMax == 1:
		// Narrow C (attention context): rows only; B is small.
		s.rg, s.cg = chunksPerWorker*t, 1
	default:
		// Many workers for few columns: t chunks, cg the largest divisor
		// of t that keeps columns at least minCols wide.
		s.cg = 1
		for d := cgMax; d > 1; d-- {
			if t%d == 0 {
				s.cg = d
				break
			}
		}
		s.rg = t / s.cg
	}
	s.rg = min(s.rg, slabs)
	s.chunks = s.rg * s.cg
	s.next.Store(0)
}

// region returns chunk i: rows [m0,m1) (m0 a multiple of mr) and columns
// [n0,n1) (n0 a multiple of nr).
func (s *gemmSplit) region(g *gemmArgs, i int) (m0, m1, n0, n1 int) {
	panels, slabs := (g.n+nr-1)/nr, (g.m+mr-1)/mr
	r, c := i/s.cg, i%s.cg
	m0, m1 = r*slabs/s.rg*mr, min((r+1)*slabs/s.rg*mr, g.m)
	n0, n1 = c*panels/s.cg*nr, min((c+1)*panels/s.cg*nr, g.n)
	return m0, m1, n0, n1
}

// gemm runs a validated product on the pool.
func (p *Pool) gemm(g *gemmArgs) {
	if g.m == 0 || g.n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		panic("gemm: use of closed Pool")
	}
	if w := p.workers[0]; w.sys != nil {
		w.sysGemm(g)
		return
	}
	t := len(p.workers)
	if t == 1 || 2*float64(g.m)*float64(g.n)*float64(g.k) < parallelFlops {
		p.workers[0].gemmRegion(g, 0, g.m, 0, g.n)
		return
	}
	s := &p.split
	s.plan(g, t)
	p.cur = *g // the pool's copy, so the caller's args stay on its stack
	p.kind, p.g = taskGemm, &p.cur
	p.dispatch(min(t, s.chunks))
	p.g, p.cur = nil, gemmArgs{}
}
