package search

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/clipidx/clipidx/store"
)

// Metadata is where a search reads the records' metadata, in the read
// session it searches (store.Snapshot's EachMeta and Meta).
type Metadata interface {
	// EachMeta calls fn for every record with metadata, in path order.
	EachMeta(fn func(path string, m store.Meta) error) error
	// Meta returns the metadata of the record at path; false when it has
	// none.
	Meta(path string) (store.Meta, bool, error)
}

// noMetadata is the metadata of an index where no record has any.
type noMetadata struct{}

func (noMetadata) EachMeta(func(string, store.Meta) error) error { return nil }
func (noMetadata) Meta(string) (store.Meta, bool, error)         { return store.Meta{}, false, nil }

func metadata(s *store.Snapshot, opts Options) Metadata {
	if opts.Meta == nil {
		return noMetadata{}
	}
	if md := opts.Meta(s); md != nil {
		return md
	}
	return noMetadata{}
}

// A filtered search takes one of two ways, chosen by how many records
// match in a sample:
//
//   - many match: the scan keeps the best vectors (up to lazyDepth per
//     worker), and they are tested best first, each by its paths and their
//     metadata, until K match (and every vector within the 16-bit error
//     window of the K-th). The cost is the unfiltered scan and a few
//     lookups per vector tested.
//   - few match: one pass over the metadata marks the vectors of the
//     matching records, and the scan reads only those rows. The pass reads
//     the store's metadata column (store.MetaColumn) when the index has one
//     up to date, and then costs a small part of the unfiltered scan: so
//     with a column, "few" is anything under half the records.
//
// When the first way runs out of kept vectors before K match, the second
// runs. Either way the result is the K best of the matching records.
const (
	lazyDepth = 8192 // vectors kept per scan worker for the first way
	samples   = 256  // vectors tested to choose the way
)

// filterRun is a filter applied to one snapshot.
type filterRun struct {
	s     *store.Snapshot
	md    Metadata
	m     *matcher
	under []string
	kept  map[store.VecID][]string // vector → its matching paths

	col     *store.MetaColumn // see column
	colErr  error
	colRead bool
}

func newFilterRun(s *store.Snapshot, opts Options) *filterRun {
	return &filterRun{s: s, md: metadata(s, opts), m: newMatcher(&opts.Filter), under: opts.Under, kept: map[store.VecID][]string{}}
}

// keeps reports whether the record at path passes the filter (and Under).
func (r *filterRun) keeps(path string) (bool, error) {
	if !underAny(path, r.under) || !r.m.f.KeepsPath(path) {
		return false, nil
	}
	if !r.m.f.NeedsMeta() {
		return true, nil
	}
	m, ok, err := r.md.Meta(path)
	if err != nil || !ok {
		return false, err
	}
	return r.m.match(path, &m), nil
}

// allowed reports whether any path of vector id passes, and keeps those
// paths for the listing.
func (r *filterRun) allowed(id store.VecID) (bool, error) {
	if ps, ok := r.kept[id]; ok {
		return len(ps) > 0, nil
	}
	ps := []string{}
	for _, p := range r.s.Paths(id) {
		ok, err := r.keeps(p)
		if err != nil {
			return false, err
		}
		if ok {
			ps = append(ps, p)
		}
	}
	r.kept[id] = ps
	return len(ps) > 0, nil
}

func (r *filterRun) paths(id store.VecID) []string { return r.kept[id] }

func searchFiltered(s *store.Snapshot, chunks []store.Chunk, q []float32, k int, window float32, under bitset, opts Options) ([]Result, error) {
	r := newFilterRun(s, opts)
	depth, err := r.depth(chunks, under, k)
	if err != nil {
		return nil, err
	}
	if depth > 0 {
		cands, drop, err := scan(chunks, q, depth, window, opts.Exact, under, opts.Threads)
		if err != nil {
			return nil, err
		}
		matched, ok, err := r.walk(cands, drop, k, window)
		if err != nil {
			return nil, err
		}
		if ok {
			out := list(rerank(chunks, q, matched, k, window, opts.Exact, opts.damaged(s)), k, opts.Threshold, r.paths)
			return sortByDate(s, out, opts)
		}
	}
	allow, fromColumn, err := r.columnPass(chunks, under)
	if err == nil && !fromColumn {
		allow, err = r.pass(len(chunks))
	}
	if err != nil {
		return nil, err
	}
	cands, _, err := scan(chunks, q, k, window, opts.Exact, allow, opts.Threads)
	if err != nil {
		return nil, err
	}
	cands = rerank(chunks, q, cands, k, window, opts.Exact, opts.damaged(s))
	if fromColumn {
		// The column kept the vectors; their matching paths come from the
		// records, for the few listed.
		for _, c := range cands {
			if _, err := r.allowed(c.id); err != nil {
				return nil, err
			}
		}
	}
	out := list(cands, k, opts.Threshold, r.paths)
	return sortByDate(s, out, opts)
}

// depth is how many vectors each scan worker keeps for the first way:
// eight times the expected depth of the K-th match (k·seen/hits, by a
// sample of the vectors), at least 256; 0 (the second way) when that is
// over lazyDepth, or when the sample holds no match. An index of at most
// lazyDepth vectors is kept whole.
func (r *filterRun) depth(chunks []store.Chunk, under bitset, k int) (int, error) {
	live := 0
	for _, c := range chunks {
		live += c.LiveCount()
	}
	if live <= lazyDepth {
		return lazyDepth, nil
	}
	rng := rand.New(rand.NewPCG(uint64(live), 26)) // the same choice for the same index
	seen, hits := 0, 0
	for try := 0; try < 8*samples && seen < samples; try++ {
		c := chunks[rng.IntN(len(chunks))]
		slot := rng.IntN(store.ChunkSlots)
		id := c.First + store.VecID(slot)
		if !c.Live(slot) || under != nil && !under.has(uint64(id)) {
			continue
		}
		seen++
		ok, err := r.allowed(id)
		if err != nil {
			return 0, err
		}
		if ok {
			hits++
		}
	}
	if hits == 0 || 8*k*seen > hits*lazyDepth {
		return 0, nil
	}
	if col, err := r.column(); err != nil || col != nil && 2*hits < seen {
		return 0, err
	}
	return max(256, 8*k*seen/hits), nil
}

// walk tests the candidates best first until k pass and the next is
// below the k-th's score less window: the matching candidates that may
// rank in the top k. ok is false when the scan may have left out a vector
// that could (drop: see scan).
func (r *filterRun) walk(cands []cand, drop float32, k int, window float32) (matched []cand, ok bool, err error) {
	sortCands(cands)
	var kth float32
	for _, c := range cands {
		if c.score <= drop {
			return nil, false, nil
		}
		if len(matched) >= k && c.score < kth-window {
			return matched, true, nil
		}
		pass, err := r.allowed(c.id)
		if err != nil {
			return nil, false, err
		}
		if pass {
			if matched = append(matched, c); len(matched) == k {
				kth = c.score
			}
		}
	}
	return matched, math.IsInf(float64(drop), -1), nil
}

// pass marks the vectors with a matching record: one pass over the
// metadata, or over the records when the filter reads none.
func (r *filterRun) pass(chunks int) (bitset, error) {
	allow := newBitset(chunks)
	r.kept = map[store.VecID][]string{}
	keep := func(p string, vec store.VecID) {
		if vec != 0 {
			allow.set(uint64(vec))
			r.kept[vec] = append(r.kept[vec], p)
		}
	}
	if !r.m.f.NeedsMeta() {
		dirs := r.under
		if len(dirs) == 0 {
			dirs = []string{""}
		}
		for _, d := range dirs {
			err := r.s.FilesWithin(d, func(p string, f store.File) error {
				if underAny(p, r.under) && r.m.f.KeepsPath(p) {
					keep(p, f.Vec)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		return allow, nil
	}
	err := r.md.EachMeta(func(p string, m store.Meta) error {
		if !underAny(p, r.under) || !r.m.match(p, &m) {
			return nil
		}
		f, ok, err := r.s.File(p)
		if ok {
			keep(p, f.Vec)
		}
		return err
	})
	for _, ps := range r.kept {
		slices.Sort(ps)
	}
	return allow, err
}

// sortByDate orders results by capture date when opts asks for it
// (records without a date last, then by score), reading their metadata.
func sortByDate(s *store.Snapshot, res []Result, opts Options) ([]Result, error) {
	if opts.Order == ByScore {
		return res, nil
	}
	md := metadata(s, opts)
	for i := range res {
		m, ok, err := md.Meta(res[i].Path)
		if err != nil {
			return nil, err
		}
		if ok {
			res[i].Meta = &m
		}
	}
	slices.SortStableFunc(res, func(a, b Result) int { return byDate(a.Meta, b.Meta, opts.Order) })
	return res, nil
}

// byDate compares two records' dates in order o; a record without one
// comes last.
func byDate(a, b *store.Meta, o Order) int {
	da, db := a != nil && a.TakenSource != "", b != nil && b.TakenSource != ""
	switch {
	case !da || !db:
		return -cmp.Compare(btoi(da), btoi(db))
	case o == ByDateDesc:
		return cmp.Or(cmp.Compare(b.Taken, a.Taken), cmp.Compare(b.TakenNs, a.TakenNs))
	}
	return cmp.Or(cmp.Compare(a.Taken, b.Taken), cmp.Compare(a.TakenNs, b.TakenNs))
}

// byPath orders paths of records whose dates tie: by path, except the
// frames of one video, which share its date, by their time (#t=8 before
// #t=16).
func byPath(a, b string) int {
	if va, ta, ok := store.SplitFrame(a); ok {
		if vb, tb, ok := store.SplitFrame(b); ok && va == vb {
			return cmp.Compare(ta, tb)
		}
	}
	return strings.Compare(a, b)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// List returns the records opts.Filter keeps, by capture date (newest
// first, or oldest first for ByDate; records without a date last, in path
// order): at most opts.K (10 when 0). It is a query with qualifiers and no
// terms; Threshold does not apply.
func List(s *store.Snapshot, opts Options) ([]Result, error) {
	k := opts.K
	if k <= 0 {
		k = 10
	}
	order := opts.Order
	if order == ByScore {
		order = ByDateDesc
	}
	var err error
	if opts.Under, err = UnderForms(s, opts.Under); err != nil {
		return nil, err
	}
	r := newFilterRun(s, opts)
	if out, ok, err := r.listColumn(k, order, opts.Frames); ok || err != nil {
		return out, err
	}
	type rec struct {
		path string
		meta *store.Meta
	}
	var recs []rec
	if r.m.f.NeedsMeta() {
		err = r.md.EachMeta(func(p string, m store.Meta) error {
			if underAny(p, r.under) && r.m.match(p, &m) {
				recs = append(recs, rec{p, &m})
			}
			return nil
		})
	} else {
		// Every record the kind keeps, dated where it has metadata: both
		// passes run in path order.
		err = r.s.Files("", func(p string, f store.File) error {
			if f.Vec != 0 && underAny(p, r.under) && r.m.f.KeepsPath(p) {
				recs = append(recs, rec{path: p})
			}
			return nil
		})
		i := 0
		if err == nil {
			err = r.md.EachMeta(func(p string, m store.Meta) error {
				for i < len(recs) && recs[i].path < p {
					i++
				}
				if i < len(recs) && recs[i].path == p {
					recs[i].meta = &m
				}
				return nil
			})
		}
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(recs, func(a, b rec) int { return cmp.Or(byDate(a.meta, b.meta, order), byPath(a.path, b.path)) })
	var out []Result
	seen := map[string]bool{} // videos listed (by their first frame in this order), unless opts.Frames
	for _, x := range recs {
		if len(out) == k {
			break
		}
		if v, _, ok := store.SplitFrame(x.path); ok && !opts.Frames {
			if seen[v] {
				continue
			}
			seen[v] = true
		}
		f, ok, err := s.File(x.path)
		if err != nil {
			return nil, err
		}
		if ok && f.Vec != 0 { // a failed file has metadata but no vector
			out = append(out, Result{Path: x.path, ID: f.Vec, Meta: x.meta})
		}
	}
	return out, nil
}
