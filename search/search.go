package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/clipidx/clipidx/store"
)

// ErrBadQuery is returned when the query vector has the wrong length, is
// not finite or has zero norm.
var ErrBadQuery = errors.New("invalid query vector")

// Options configures Search; the zero value returns the 10 best files.
type Options struct {
	K int // number of files to return; 0 = 10
	// Threshold, when set, drops results whose cosine is below it.
	Threshold *float32
	// Under restricts results to files inside these directories, or
	// samples of these tar shards (store.Within; absolute,
	// clean), as given or through symbolic links (UnderForms); empty =
	// everywhere.
	Under []string
	// Threads scanning in parallel; 0 = runtime.NumCPU().
	Threads int
	// Exact scans the full float32 vectors instead of the 16-bit halves
	// (slower; results are the same; for tests and benchmarks).
	Exact bool
	// Frames lists every matching frame of a video (VIDEO#t=S) as a
	// result; by default a video is one result, its best frame.
	Frames bool
	// Filter keeps only the records it matches, before ranking: the K
	// best of the matching records (see Filter); zero = every record.
	Filter Filter
	// Order lists the results by score (the default) or by capture date.
	Order Order
	// Meta gives the metadata of the snapshot searched, for Filter and
	// Order; nil = no record has metadata.
	Meta func(*store.Snapshot) Metadata
	// Damaged, when set, is told the paths of every stored vector that
	// would have been among the results but is not a unit vector (the
	// index file was damaged on disk; store.Check finds them all). Such
	// vectors are left out of the results, which may then number fewer
	// than K; it may be called more than once for one vector.
	Damaged func(paths []string)
}

// Result is one matching file.
type Result struct {
	Path  string      `json:"path"`
	Score float32     `json:"score"` // cosine similarity
	ID    store.VecID `json:"-"`
	// Meta is the record's metadata when the search read it (a filter,
	// a sort by date or a listing did); nil otherwise.
	Meta *store.Meta `json:"-"`
}

type cand struct {
	id    store.VecID
	score float32
	chunk int // index into chunks, for the exact re-rank
	slot  int
}

// better orders by score, then by id for a deterministic tie break.
func better(a, b cand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id < b.id
}

// Search returns the files whose vectors are most similar to q (normalised
// here), best first: at most opts.K paths. Files sharing one vector
// (duplicates) are listed together with the same score. A file cut short
// or rewritten in place under s fails it with an error matching
// store.ErrFault (s's View guards the reads on its goroutine, scan those
// of its workers).
func Search(s *store.Snapshot, q []float32, opts Options) ([]Result, error) {
	if !opts.Frames {
		return searchVideos(s, q, opts) // group.go
	}
	return searchFiles(s, q, opts)
}

// searchFiles is Search with every frame a result of its own.
func searchFiles(s *store.Snapshot, q []float32, opts Options) ([]Result, error) {
	dim := s.Dim()
	if len(q) != dim {
		return nil, fmt.Errorf("%w: length %d, index dimension %d", ErrBadQuery, len(q), dim)
	}
	q, err := unit(q)
	if err != nil {
		return nil, err
	}
	k := opts.K
	if k <= 0 {
		k = 10
	}
	chunks, err := s.Chunks()
	if err != nil {
		return nil, err
	}
	if opts.Under, err = UnderForms(s, opts.Under); err != nil {
		return nil, err
	}
	allow, err := underAllow(s, chunks, opts.Under)
	if err != nil {
		return nil, err
	}
	var window float32
	if !opts.Exact {
		window = float32(2 * errorBound(1, dim))
	}
	if !opts.Filter.IsZero() {
		return searchFiltered(s, chunks, q, k, window, allow, opts)
	}
	cands, _, err := scan(chunks, q, k, window, opts.Exact, allow, opts.Threads)
	if err != nil {
		return nil, err
	}
	cands = rerank(chunks, q, cands, k, window, opts.Exact, opts.damaged(s))
	out := list(cands, k, opts.Threshold, func(id store.VecID) []string {
		var ps []string
		for _, p := range s.Paths(id) {
			if underAny(p, opts.Under) {
				ps = append(ps, p)
			}
		}
		return ps
	})
	return sortByDate(s, out, opts)
}

// underAllow marks the vectors of the records Within any of dirs; nil
// (every vector) when dirs is empty.
func underAllow(s *store.Snapshot, chunks []store.Chunk, dirs []string) (bitset, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	allow := newBitset(len(chunks))
	for _, d := range dirs {
		err := s.FilesWithin(d, func(_ string, f store.File) error {
			allow.set(uint64(f.Vec))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return allow, nil
}

func newBitset(chunks int) bitset { return make(bitset, (chunks*store.ChunkSlots+64)/64+1) }

// sortCands orders candidates best first.
func sortCands(cands []cand) {
	slices.SortFunc(cands, func(a, b cand) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
}

// rerank re-scores exactly every candidate that may belong to the top k
// (within window of the k-th best 16-bit score) and returns them best
// first; those whose vector is not a unit vector (damaged on disk) are
// left out and given to damaged.
func rerank(chunks []store.Chunk, q []float32, cands []cand, k int, window float32, exact bool, damaged func(store.VecID)) []cand {
	sortCands(cands)
	if len(cands) == 0 {
		return cands
	}
	floor := cands[min(k, len(cands))-1].score - window
	keep := cands[:0]
	v := make([]float32, len(q))
	for _, c := range cands {
		if c.score < floor {
			break
		}
		unpack(v, chunks[c.chunk], c.slot, len(q))
		if !store.IsUnit(v) {
			damaged(c.id)
			continue
		}
		if !exact {
			c.score = dot32(q, v)
		}
		keep = append(keep, c)
	}
	sortCands(keep)
	return keep
}

// damaged is what rerank tells of a damaged vector: its paths, to
// o.Damaged.
func (o Options) damaged(s *store.Snapshot) func(store.VecID) {
	return func(id store.VecID) {
		if o.Damaged != nil {
			o.Damaged(s.Paths(id))
		}
	}
}

// list turns ranked candidates into at most k results, a vector's listed
// paths (paths) all with its score.
func list(cands []cand, k int, threshold *float32, paths func(store.VecID) []string) []Result {
	var out []Result
	for _, c := range cands {
		if len(out) >= k || (threshold != nil && c.score < *threshold) {
			break
		}
		for _, p := range paths(c.id) {
			if len(out) < k {
				out = append(out, Result{Path: p, Score: c.score, ID: c.id})
			}
		}
	}
	return out
}

// UnderForms is each of dirs (absolute) in every form the index may hold
// files under it as: as given; when it exists, its real path (symbolic
// links resolved); and, since a build records paths as it walked them,
// that real path as seen through each indexed root that resolves above
// or below it (a root given as a link). Without duplicates, dirs first.
func UnderForms(s *store.Snapshot, dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return dirs, nil
	}
	roots, err := s.Roots()
	if err != nil {
		return nil, err
	}
	out := slices.Clone(dirs)
	add := func(d string) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	var real map[string]string // root → its real path, when first needed
	for _, d := range dirs {
		rp, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		add(rp)
		if real == nil {
			real = make(map[string]string, len(roots))
			for _, r := range roots {
				if rr, err := filepath.EvalSymlinks(r); err == nil {
					real[r] = rr
				}
			}
		}
		for _, r := range roots {
			rr, ok := real[r]
			switch {
			case !ok:
			case store.Under(rp, rr):
				add(filepath.Join(r, strings.TrimPrefix(rp, rr)))
			case store.Under(rr, rp):
				add(r)
			}
		}
	}
	return out, nil
}

func underAny(p string, dirs []string) bool {
	if len(dirs) == 0 {
		return true
	}
	for _, d := range dirs {
		if store.Within(p, d) {
			return true
		}
	}
	return false
}

// unpack rebuilds slot's exact float32 vector.
func unpack(dst []float32, c store.Chunk, slot, dim int) {
	hi := c.Hi[slot*dim*2:]
	lo := c.Lo[slot*dim*2:]
	for i := range dst {
		dst[i] = store.Join(binary.LittleEndian.Uint16(hi[2*i:]), binary.LittleEndian.Uint16(lo[2*i:]))
	}
}

// scan scores every live, allowed slot and returns, per worker merged, the
// top k plus every slot within window of a worker's k-th best at the time,
// and drop: every slot left out scored at most drop (-Inf when none was).
// A chunk where few slots are allowed has only those rows read.
//
// The workers read the mapped file on goroutines of their own, which the
// View's guard does not cover: each runs under store.Guard, so that a file
// cut short or rewritten in place under the snapshot makes the search fail
// (store.ErrFault) instead of the process (SIGBUS).
func scan(chunks []store.Chunk, q []float32, k int, window float32, exact bool, allow bitset, threads int) ([]cand, float32, error) {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	threads = min(threads, max(1, len(chunks)))
	var next atomic.Int64
	results := make([][]cand, threads)
	drops := make([]float32, threads)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	hq := newHiQuery(q) // read only, shared by the workers
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = store.Guard(func() error {
				results[w], drops[w] = scanChunks(chunks, &next, q, hq, k, window, exact, allow)
				return nil
			})
			if errs[w] != nil {
				next.Store(int64(len(chunks))) // the others stop at their next chunk
			}
		}()
	}
	wg.Wait()
	var out []cand
	drop := float32(math.Inf(-1))
	for w, r := range results {
		if errs[w] != nil {
			return nil, 0, errs[w]
		}
		out = append(out, r...)
		drop = max(drop, drops[w])
	}
	return out, drop, nil
}

// scanChunks is one scan worker: it scores the chunks it takes (next)
// until none is left and returns its top k and near misses, and its drop.
func scanChunks(chunks []store.Chunk, next *atomic.Int64, q []float32, hq *hiQuery, k int, window float32, exact bool, allow bitset) ([]cand, float32) {
	dim := len(q)
	t := topk{k: k, window: window}
	buf := make([]float32, dim)
	scores := make([]float32, store.ChunkSlots)
	rows := make([]int, 0, store.ChunkSlots)
	for {
		ci := int(next.Add(1) - 1)
		if ci >= len(chunks) {
			break
		}
		c := chunks[ci]
		if !exact && allow != nil {
			if rows := sparseRows(c, allow, rows[:0]); rows != nil {
				for _, slot := range rows {
					hq.scoreRows(c.Hi[slot*dim*2:(slot+1)*dim*2], scores[:1])
					if sc := scores[0]; sc >= t.floor() {
						t.push(cand{id: c.First + store.VecID(slot), score: sc, chunk: ci, slot: slot})
					}
				}
				continue
			}
		}
		if !exact {
			// Every slot in one call: the kernel streams the chunk's rows
			// four at a time (dead slots too: a chunk is rarely sparse,
			// and skipping would break the stream).
			hq.scoreRows(c.Hi, scores)
			// Scores under the floor are what push would drop: skipping
			// them first keeps this loop off the core that should be
			// streaming (with every slot through push it took 8% of a
			// 1M x 1024 search's CPU time on Intel Xeon (Emerald Rapids,
			// family 6 model 0xcf), 2 vCPUs). The floor only rises, so
			// one taken per chunk is safe.
			floor := t.floor()
			for slot, sc := range scores {
				if sc < floor || !c.Live(slot) {
					continue
				}
				id := c.First + store.VecID(slot)
				if allow != nil && !allow.has(uint64(id)) {
					continue
				}
				t.push(cand{id: id, score: sc, chunk: ci, slot: slot})
			}
			continue
		}
		for slot := range store.ChunkSlots {
			if !c.Live(slot) {
				continue
			}
			id := c.First + store.VecID(slot)
			if allow != nil && !allow.has(uint64(id)) {
				continue
			}
			unpack(buf, c, slot, dim)
			t.push(cand{id: id, score: dot32(q, buf), chunk: ci, slot: slot})
		}
	}
	drop := float32(math.Inf(-1))
	if len(t.heap) == t.k {
		drop = t.heap[0].score - t.window
	}
	return t.all(), drop
}

// sparseRows returns the live, allowed slots of c when they are under an
// eighth of its slots (read one by one, they cost less than the chunk),
// and nil otherwise.
func sparseRows(c store.Chunk, allow bitset, rows []int) []int {
	for slot := range store.ChunkSlots {
		if allow.has(uint64(c.First)+uint64(slot)) && c.Live(slot) {
			if rows = append(rows, slot); len(rows) >= store.ChunkSlots/8 {
				return nil
			}
		}
	}
	return rows
}

// topk keeps a min-heap of the k best and, beside it, every candidate whose
// score was within window of the heap's minimum when it arrived.
type topk struct {
	k      int
	window float32
	heap   []cand // min-heap by better
	extra  []cand // near misses, pruned now and then
}

func (t *topk) push(c cand) {
	if len(t.heap) < t.k {
		t.heap = append(t.heap, c)
		t.up(len(t.heap) - 1)
		return
	}
	min := t.heap[0]
	if better(c, min) {
		t.heap[0] = c
		t.down(0)
		if t.window > 0 {
			t.extra = append(t.extra, min) // the evicted one may still be needed
		}
	} else if t.window > 0 && c.score >= min.score-t.window {
		t.extra = append(t.extra, c)
	} else {
		return
	}
	if len(t.extra) > 4*t.k+1024 {
		floor := t.heap[0].score - t.window
		t.extra = slices.DeleteFunc(t.extra, func(e cand) bool { return e.score < floor })
	}
}

func (t *topk) all() []cand { return append(t.heap, t.extra...) }

// floor is the score below which push keeps nothing: -Inf until the heap
// holds k, then its minimum less the window (computed as push does).
func (t *topk) floor() float32 {
	if len(t.heap) < t.k {
		return float32(math.Inf(-1))
	}
	return t.heap[0].score - t.window
}

func (t *topk) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(t.heap[p], t.heap[i]) {
			break
		}
		t.heap[p], t.heap[i] = t.heap[i], t.heap[p]
		i = p
	}
}

func (t *topk) down(i int) {
	n := len(t.heap)
	for {
		l, m := 2*i+1, i
		if l < n && better(t.heap[m], t.heap[l]) {
			m = l
		}
		if r := l + 1; r < n && better(t.heap[m], t.heap[r]) {
			m = r
		}
		if m == i {
			return
		}
		t.heap[m], t.heap[i] = t.heap[i], t.heap[m]
		i = m
	}
}

// unit is store.Normalize with the error of a query (ErrBadQuery).
func unit(v []float32) ([]float32, error) {
	u, err := store.Normalize(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	return u, nil
}

// bitset marks vector ids; set ignores ids beyond its length (and 0).
type bitset []uint64

func (b bitset) set(i uint64) {
	if i != 0 && i/64 < uint64(len(b)) {
		b[i/64] |= 1 << (i % 64)
	}
}

func (b bitset) has(i uint64) bool { return i/64 < uint64(len(b)) && b[i/64]&(1<<(i%64)) != 0 }
