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

// gemmSplit cuts C into chunks that the workers take in turn (a worker
// slowed down by other load on the machine simply takes fewer), either
// column chunks (the usual case: each worker packs only the part of B it
// needs) or, when C has too few columns, row chunks.
type gemmSplit struct {
	t      int
	byRow  bool
	size   int // columns (multiple of nr) or rows (multiple of mr) per chunk
	chunks int
	next   atomic.Int64
}

func (s *gemmSplit) region(g *gemmArgs, i int) (m0, m1, n0, n1 int) {
	if s.byRow {
		return i * s.size, min((i+1)*s.size, g.m), 0, g.n
	}
	return 0, g.m, i * s.size, min((i+1)*s.size, g.n)
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
	panels, slabs := (g.n+nr-1)/nr, (g.m+mr-1)/mr
	s.byRow = panels < 2*t && slabs > panels
	if s.byRow {
		s.size = max(mr, (slabs+chunksPerWorker*t-1)/(chunksPerWorker*t)*mr)
		s.chunks = (g.m + s.size - 1) / s.size
	} else {
		minCols := minChunkCols
		if !directA(g.lda) {
			minCols = minChunkColsCopy // every chunk copies all of A
		}
		// A multiple of t chunks, so that equal speeds give equal shares.
		per := max(1, min(chunksPerWorker, g.n/(t*minCols)))
		s.size = (panels + per*t - 1) / (per * t) * nr
		s.chunks = (g.n + s.size - 1) / s.size
	}
	s.next.Store(0)
	p.cur = *g // the pool's copy, so the caller's args stay on its stack
	p.kind, p.g = taskGemm, &p.cur
	p.dispatch(min(t, s.chunks))
	p.g, p.cur = nil, gemmArgs{}
}
