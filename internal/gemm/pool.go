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
//
// Products, Parallel and ShareWorkers are shared loops: the caller wakes
// the other workers without waiting for them and starts on the chunks
// itself; every worker takes the next chunk with one atomic ticket, and
// the call returns when all chunks are done, not when all workers have
// checked in. A worker that the OS has descheduled (or that is slow to
// wake) therefore holds up a call only by the chunk it is running, and
// when it wakes after the call it finds no chunk and sleeps again.
type Pool struct {
	mu      sync.Mutex
	workers []*Worker
	start   []chan bool // start[i] wakes worker i (i ≥ 1): true for a static task, false for a shared one
	wg      sync.WaitGroup
	closed  bool

	// ticket is the shared loop's state: total<<32 | next chunk. A worker
	// that wins next by compare-and-swap owns that chunk of the current
	// task; the task's fields below are published before ticket is stored
	// and stay fixed until all chunks are done.
	ticket atomic.Uint64
	done   atomic.Int64  // chunks of the current shared task finished
	fin    chan struct{} // signalled once per shared task, by whoever finishes its last chunk

	// wakeHook, when set (by a test, before the first call), runs in
	// worker i's goroutine each time it wakes, before it looks for work:
	// it stands for a worker the OS has not scheduled yet.
	wakeHook func(i int)

	// The current task.
	t     int // workers woken for a static task (ParallelWorkers)
	kind  taskKind
	n     int
	step  int // indices per chunk of a shared loop (Parallel, ShareWorkers)
	fn    func(lo, hi int)
	wfn   func(w *Worker, lo, hi int)
	g     *gemmArgs // &cur while a product runs
	cur   gemmArgs
	split gemmSplit
	// apad is the product's A copied once with a padded row stride when
	// the kernel could not read it in place (sharedA), so that the chunks
	// read that copy instead of each copying their rows of A again.
	apad  []float32
	ldPad int // apad's row stride

	// bf16A holds LinearBF16's packed A, one product at a time (bf16Mu):
	// a buffer the pool keeps, where a sync.Pool kept one per P (two of
	// 10.5 MB on ViT-H/14's image pass of 4).
	bf16Mu sync.Mutex
	bf16A  []uint16
}

// Worker is one thread of a Pool with its own packing buffers. It is handed
// to ParallelWorkers callbacks, whose products it runs single-threaded.
type Worker struct {
	id    int
	apack []float32        // A block, [mcBlock rounded to mr, kcPad]
	bpack []float32        // B block, [ncBlock/nr panels][kc][nr]
	tmp   [maxTile]float32 // an edge tile of C
	bf16A []uint16         // Worker.LinearBF16's packed A
	sys   *sysBLAS         // non-nil after Pool.UseSystemBLAS
}

// ID returns the worker's index in [0, Threads()).
func (w *Worker) ID() int { return w.id }

type taskKind uint8

const (
	taskFunc taskKind = iota
	taskWorkerFunc
	taskWorkerShare
	taskGemm
	taskCopyA // rows [lo, hi) of p.g's A into p.apad (sharedA)
)

// NewPool starts a pool of threads workers (0 or less means
// runtime.NumCPU()). Close it to stop the goroutines.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{workers: make([]*Worker, threads), start: make([]chan bool, threads), fin: make(chan struct{}, 1)}
	for i := range p.workers {
		p.workers[i] = &Worker{id: i}
	}
	for i := 1; i < threads; i++ {
		p.start[i] = make(chan bool, 1)
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
	for static := range p.start[i] {
		if p.wakeHook != nil {
			p.wakeHook(i)
		}
		if static {
			p.runStatic(w)
			p.wg.Done()
		} else {
			p.runShared(w)
		}
	}
}

// Parallel splits [0, n) into contiguous, non-empty chunks and calls
// fn(lo, hi) for each, concurrently, returning when all are done. The
// workers take the chunks in order as they free up (up to parallelChunks
// per worker, at least one index each), so a worker slowed down by other
// load does fewer of them.
func (p *Pool) Parallel(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.n, p.fn = taskFunc, n, fn
	p.dispatchShared(n)
	p.fn = nil
}

// ParallelWorkers is Parallel with the worker running each chunk, so the
// callback can run single-threaded products on the worker's buffers
// (w.MatMul, w.Linear), e.g. one attention head per index. Unlike
// Parallel, it gives each worker at most one chunk (a fixed share): a
// callback may rely on that; ShareWorkers is the dynamic variant.
func (p *Pool) ParallelWorkers(n int, fn func(w *Worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.n, p.wfn = taskWorkerFunc, n, fn
	p.dispatchStatic(min(n, len(p.workers)))
	p.wfn = nil
}

// ShareWorkers is ParallelWorkers with the chunks handed out as workers
// free up, as Parallel does: a worker may run several chunks (one after
// the other, never two at once), so per-worker scratch indexed by w.ID()
// stays safe, and a worker slowed down by other load does fewer chunks.
func (p *Pool) ShareWorkers(n int, fn func(w *Worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.n, p.wfn = taskWorkerShare, n, fn
	p.dispatchShared(n)
	p.wfn = nil
}

// dispatchShared runs a dynamically shared loop over [0, n): chunks of
// p.step indices taken in order by the workers.
func (p *Pool) dispatchShared(n int) {
	t := min(n, len(p.workers))
	p.step = max(1, (n+parallelChunks*t-1)/(parallelChunks*t))
	p.share((n+p.step-1)/p.step, t)
}

// share runs the current shared task of total chunks on up to t workers,
// the caller being worker 0, and returns when every chunk is done.
func (p *Pool) share(total, t int) {
	if p.closed {
		panic("gemm: use of closed Pool")
	}
	p.done.Store(0)
	p.ticket.Store(uint64(total) << 32) // publishes the task
	for i := 1; i < t; i++ {
		// Never block on a worker: replace a wake-up it has not taken yet
		// (from an earlier task it missed) with this one.
		select {
		case <-p.start[i]:
		default:
		}
		p.start[i] <- false
	}
	p.runShared(p.workers[0])
	<-p.fin
}

// runShared takes and runs chunks of the current shared task until none
// is left (or the task is over).
func (p *Pool) runShared(w *Worker) {
	for {
		v := p.ticket.Load()
		total, i := v>>32, v&(1<<32-1)
		if i >= total {
			return
		}
		if !p.ticket.CompareAndSwap(v, v+1) {
			continue
		}
		// Chunk i is ours: the task cannot change before it is done.
		switch p.kind {
		case taskFunc, taskWorkerShare:
			lo := int(i) * p.step
			hi := min(p.n, lo+p.step)
			if p.kind == taskFunc {
				p.fn(lo, hi)
			} else {
				p.wfn(w, lo, hi)
			}
		case taskGemm:
			m0, m1, n0, n1 := p.split.region(p.g, int(i))
			w.gemmRegion(p.g, m0, m1, n0, n1)
		case taskCopyA:
			g, ld := p.g, p.ldPad
			for r := int(i) * p.step; r < min(p.n, int(i+1)*p.step); r++ {
				copy(p.apad[r*ld:r*ld+g.k], g.a[r*g.lda:r*g.lda+g.k])
			}
		}
		if p.done.Add(1) == int64(total) {
			p.fin <- struct{}{}
		}
	}
}

// dispatchStatic runs ParallelWorkers' task on workers [0, t), each its
// fixed share, the caller being worker 0, and waits for every one of them.
func (p *Pool) dispatchStatic(t int) {
	if p.closed {
		panic("gemm: use of closed Pool")
	}
	p.t = t
	p.wg.Add(t - 1)
	for i := 1; i < t; i++ {
		p.start[i] <- true // a shared wake-up still buffered is taken first
	}
	p.runStatic(p.workers[0])
	p.wg.Wait()
}

func (p *Pool) runStatic(w *Worker) {
	if lo, hi := w.id*p.n/p.t, (w.id+1)*p.n/p.t; lo < hi {
		p.wfn(w, lo, hi)
	}
}

// gemmSplit cuts C into chunks that the workers take in order, each the
// next one as soon as it is free, so a worker slowed down by other load on
// the machine (or descheduled for a while) simply takes fewer. plan makes a
// fixed grid (planGrid); planGuided, for the benchmarks, shrinks the chunks
// as the product advances ("guided" scheduling): the first ones large (few
// packings of A and B), the last ones small.
//
// Column strips are preferred: each chunk packs the part of B under it and
// reads (or copies) the part of A beside it, so cutting C into row groups
// packs B once per group, while column strips share one pass over A per
// strip. Narrow products (attention context, n < minChunkCols per worker)
// are cut into row groups as well (B is small there), handed out round by
// round across the strips, so that workers running at the same time read
// the same rows of A.
type gemmSplit struct {
	chunks int
	chunk  [maxChunks]chunkBounds
}

// chunkBounds is one chunk: rows [m0,m1) × columns [n0,n1).
type chunkBounds struct{ m0, m1, n0, n1 int32 }

// maxChunks bounds the chunks of one product (the plan widens chunks to
// stay within it, so a Pool never allocates per product).
const maxChunks = 256

// planHook, when set (by the benchmarks), replaces plan: it lets them run
// the previous fixed grid side by side with the guided split; spread is
// guidedSpread unless a benchmark varies it.
var (
	planHook func(s *gemmSplit, g *gemmArgs, t int)
	spread   = guidedSpread
)

// plan chooses the chunks of product g for t workers: a fixed grid
// (planGrid), taken dynamically. The guided split (planGuided) shrinks the
// chunks as a product advances; measured side by side on ViT-H/14 passes
// (Emerald Rapids, 2 threads, an idle machine) it kept fewer cores busy
// (1.7 against 1.9 of 2) and ran the image pass about 10% and the text pass
// about 20% slower, so it is kept for the benchmarks only.
func (s *gemmSplit) plan(g *gemmArgs, t int) {
	if g.kr == nil {
		g.kr = currentKernel().kr
	}
	s.chunks = 0
	if planHook != nil {
		planHook(s, g, t)
		return
	}
	planGrid(s, g, t)
}

// planGrid cuts C into a grid of rg × cg equal chunks (up to
// gridChunksPerWorker a worker, at least minChunkCols wide), which the
// workers take in order, each the next one as soon as it is free.
func planGrid(s *gemmSplit, g *gemmArgs, t int) {
	mr, nr := g.kr.mr, g.kr.nr
	panels, slabs := (g.n+nr-1)/nr, (g.m+mr-1)/mr
	minCols := minChunkCols
	if !directA(g.kr, g.lda) {
		minCols = minChunkColsCopy
	}
	cgMax := max(1, min(panels, g.n/minCols))
	var rg, cg int
	switch {
	case cgMax >= t:
		rg, cg = 1, min(gridChunksPerWorker, cgMax/t)*t
	case cgMax == 1:
		rg, cg = gridChunksPerWorker*t, 1
	default:
		cg = 1
		for d := cgMax; d > 1; d-- {
			if t%d == 0 {
				cg = d
				break
			}
		}
		rg = t / cg
	}
	rg = min(rg, slabs)
	// The last round of column strips, one a worker, is taken in row
	// halves (see tailHalves).
	halve := 0
	if rg == 1 && cg >= 2*t && slabs >= 2*minChunkSlabs && cg+t <= maxChunks && tailHalves {
		halve = t
	}
	for i := 0; i < rg*cg; i++ {
		r, c := i/cg, i%cg
		if c < cg-halve {
			s.add(g, r*slabs/rg, (r+1)*slabs/rg, c*panels/cg, (c+1)*panels/cg)
			continue
		}
		s.add(g, 0, slabs/2, c*panels/cg, (c+1)*panels/cg)
		s.add(g, slabs/2, slabs, c*panels/cg, (c+1)*panels/cg)
	}
}

// tailHalves: planGrid cuts the last t of its column strips into two row
// halves each (both halves pack the strip's part of B), so that the
// workers end a product at most half a strip apart instead of a whole one.
// On Emerald Rapids (2 threads, ViT-H/14's image tower) the workers were
// idle for 5–6% of their time inside products waiting for the last strip,
// and 2–2.5% with the halves; the image fc1 ran 0.89–0.91x the time
// (TestSplitCoversC checks the cover; BenchmarkPoolUnderLoad's "whole"
// side runs without the halves).
var tailHalves = true

// gridChunksPerWorker is how many grid chunks a worker gets on average.
const gridChunksPerWorker = 4

// planGuided is the guided split (see gemmSplit), for the benchmarks.
func planGuided(s *gemmSplit, g *gemmArgs, t int) {
	kr := g.kr
	panels, slabs := (g.n+kr.nr-1)/kr.nr, (g.m+kr.mr-1)/kr.mr
	minCols := minChunkCols
	if !directA(kr, g.lda) {
		minCols = minChunkColsCopy // every chunk copies its rows of A
	}
	minPanels := max(1, (minCols+kr.nr-1)/kr.nr)
	if panels >= t*minPanels {
		// Columns only: guided strips of whole panels.
		var cuts [maxChunks + 1]int
		nc := guided(cuts[:], panels, t, minPanels)
		for i := 0; i < nc; i++ {
			s.add(g, 0, slabs, cuts[i], cuts[i+1])
		}
		return
	}
	// Few columns: cg equal strips, each cut into guided row groups.
	cg := max(1, min(t, panels/minPanels))
	var rcuts [maxChunks + 1]int
	share := (t + cg - 1) / cg // workers per strip
	nrg := guided(rcuts[:maxChunks/cg+1], slabs, share, minChunkSlabs)
	for r := 0; r < nrg; r++ {
		for c := 0; c < cg; c++ {
			s.add(g, rcuts[r], rcuts[r+1], c*panels/cg, (c+1)*panels/cg)
		}
	}
}

// guided cuts [0, total) units for t workers into pieces that shrink from
// about total/(spread·t) down to minUnit (the last one may be
// smaller), writing the boundaries to cuts and returning the number of
// pieces; cuts has room for len(cuts)-1 pieces, and pieces widen to fit.
func guided(cuts []int, total, t, minUnit int) int {
	minUnit = max(minUnit, (total+len(cuts)-2)/(len(cuts)-1))
	n, at := 0, 0
	for at < total {
		size := max(minUnit, (total-at)/(spread*t))
		if rest := total - at - size; rest > 0 && rest < minUnit {
			size += rest // no sliver at the end
		}
		cuts[n] = at
		at = min(total, at+size)
		n++
	}
	cuts[n] = total
	return n
}

// add appends the chunk of slabs [s0,s1) × panels [p0,p1), in elements.
func (s *gemmSplit) add(g *gemmArgs, s0, s1, p0, p1 int) {
	mr, nr := g.kr.mr, g.kr.nr
	s.chunk[s.chunks] = chunkBounds{
		int32(s0 * mr), int32(min(s1*mr, g.m)),
		int32(p0 * nr), int32(min(p1*nr, g.n)),
	}
	s.chunks++
}

// region returns chunk i: rows [m0,m1) (m0 a multiple of mr) and columns
// [n0,n1) (n0 a multiple of nr).
func (s *gemmSplit) region(g *gemmArgs, i int) (m0, m1, n0, n1 int) {
	c := s.chunk[i]
	return int(c.m0), int(c.m1), int(c.n0), int(c.n1)
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
	p.cur = *g // the pool's copy, so the caller's args stay on its stack
	p.cur.kr = currentKernel().kr
	for _, w := range p.workers {
		// Before the task is published (no worker runs a chunk now): a
		// worker allocates once, not whenever it first wins a chunk.
		w.buffers(p.cur.kr)
	}
	p.sharedA(&p.cur)
	s := &p.split
	s.plan(&p.cur, t)
	p.kind, p.g = taskGemm, &p.cur
	p.share(s.chunks, min(t, s.chunks))
	p.g, p.cur = nil, gemmArgs{}
}

// sharedA replaces g's A, when its stride keeps the kernel from reading it
// in place (directA), by a copy with a padded stride that it can read in
// place, made once by the workers together (a shared loop over its rows).
// Otherwise every chunk of the product copies its rows of A block by block
// (packA), which with column strips is every row of A once per strip. On ViT-H/14 (Emerald
// Rapids, 2 threads) those copies, with the AVX-512 kernel copying A for
// every stride before directA's aWays rule, took 6% of an image pass's CPU
// time; with both, 1.3%.
func (p *Pool) sharedA(g *gemmArgs) {
	kr := g.kr
	if directA(kr, g.lda) || aMode != 0 || g.k == 0 {
		return
	}
	ld := paddedStride(kr, g.k)
	if ld < 0 {
		return
	}
	if need := g.m * ld; len(p.apad) < need {
		p.apad = make([]float32, need)
	}
	p.kind, p.n, p.g, p.ldPad = taskCopyA, g.m, g, ld
	p.dispatchShared(g.m)
	p.g = nil
	g.a, g.lda = p.apad[:g.m*ld], ld
}

// paddedStride returns the smallest row stride ≥ k (in steps of 16 floats,
// one cache line) that kernel kr reads in place, or -1 if none within
// 4 KiB of padding does.
func paddedStride(kr *microKernel, k int) int {
	for ld := (k + 15) &^ 15; ld <= k+1024; ld += 16 {
		if directA(kr, ld) {
			return ld
		}
	}
	return -1
}
