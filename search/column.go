package search

import (
	"cmp"
	"slices"

	"github.com/clipidx/clipidx/store"
)

// columnSource is a Metadata that also gives the index's metadata column
// (store.Snapshot does).
type columnSource interface {
	MetaColumn() (*store.MetaColumn, error)
}

// colFilter is a filter read against the metadata column: the place and
// camera qualifiers are decided once per name in the column's dictionary,
// so a vector costs a few loads from fixed-size arrays.
type colFilter struct {
	f       *Filter
	meta    bool   // the filter reads metadata
	dated   bool   // it has a date qualifier
	placeOK []bool // by place id (0 = none)
	camOK   []bool // by camera id (0 = none): camera and lens qualifiers
}

func newColFilter(x *matcher, col *store.MetaColumn) *colFilter {
	f := x.f
	cf := &colFilter{f: f, meta: f.NeedsMeta(), dated: f.HasAfter || f.HasBefore || len(f.Years) > 0}
	if f.hasPlace() {
		cf.placeOK = make([]bool, len(col.Places)+1)
		for i, p := range col.Places {
			cf.placeOK[i+1] = x.place(p.City, p.Region, p.Country, p.CountryCode)
		}
	}
	if len(f.Cameras) > 0 || len(f.Lenses) > 0 {
		cf.camOK = make([]bool, len(col.Cameras)+1)
		for i, c := range col.Cameras {
			cf.camOK[i+1] = (len(f.Cameras) == 0 || x.camera(c.Make, c.Model)) && (len(f.Lenses) == 0 || x.lens(c.Lens))
		}
	}
	return cf
}

// keeps reports whether the files of slot i (not ColMixed: they agree on
// everything a filter reads) pass the filter; it decides as matcher.match
// does on their records.
func (cf *colFilter) keeps(ch store.ColumnChunk, i int) bool {
	fl, f := ch.Flags(i), cf.f
	if k := f.Kinds; !k.everyKind() {
		switch {
		case fl&store.ColVideo != 0:
			if k&KindVideo == 0 {
				return false
			}
		case fl&store.ColPhoto != 0:
			if !k.keepsPhoto(fl&store.ColMotion != 0, fl&store.ColLive != 0) {
				return false
			}
		}
	}
	if !cf.meta {
		return fl&(store.ColPhoto|store.ColVideo) != 0
	}
	if fl&store.ColMeta == 0 {
		return false
	}
	if cf.dated {
		if fl&store.ColDate == 0 {
			return false
		}
		t := ch.Taken(i)
		if f.HasAfter && t < f.After || f.HasBefore && t >= f.Before || len(f.Years) > 0 && !anyYear(f.Years, t) {
			return false
		}
	}
	if cf.placeOK != nil && !lookup(cf.placeOK, ch.Place(i)) {
		return false
	}
	if len(f.Near) > 0 {
		if fl&store.ColGPS == 0 {
			return false
		}
		m := store.Meta{HasGPS: true}
		m.Lat, m.Lon = ch.Position(i)
		if !f.near(&m) {
			return false
		}
	}
	if cf.camOK != nil && !lookup(cf.camOK, ch.Camera(i)) {
		return false
	}
	return true
}

// anyVariant reports whether a file of vector id (ColMixed) passes, by
// its variants in the column; known is false when it has none. Ask in
// ascending id order (see store.VariantReader).
func (cf *colFilter) anyVariant(vr *store.VariantReader, id store.VecID) (keep, known bool) {
	v, ok := vr.Variants(id)
	if !ok {
		return false, false
	}
	for i := range v.Len() {
		if cf.keeps(v, i) {
			return true, true
		}
	}
	return false, true
}

func lookup(ok []bool, id uint32) bool { return int(id) < len(ok) && ok[id] }

// columnPass is pass read from the metadata column: it marks the live
// vectors (in under, when not nil) whose files the filter keeps. A vector
// whose files differ (ColMixed), or one in a chunk without a column, is
// tested on its records. ok is false when the index has no current column
// (then pass reads the records).
func (r *filterRun) columnPass(chunks []store.Chunk, under bitset) (allow bitset, ok bool, err error) {
	col, err := r.column()
	if err != nil || col == nil {
		return nil, false, err
	}
	cf := newColFilter(r.m, col)
	vr := col.VariantReader()
	allow = bitsetFor(chunks)
	for _, c := range chunks {
		ch, has := col.Chunk(c.First)
		for slot := range store.ChunkSlots {
			if !c.Live(slot) {
				continue
			}
			id := c.First + store.VecID(slot)
			if under != nil && !under.has(uint64(id)) {
				continue
			}
			keep, known := false, false
			switch {
			case !has:
			case ch.Flags(slot)&store.ColMixed == 0:
				keep, known = cf.keeps(ch, slot), true
			case under == nil:
				// Its files differ: it passes when one of them does. (With
				// Under that file must be one under it: read them.)
				keep, known = cf.anyVariant(vr, id)
			}
			if !known {
				if keep, err = r.allowed(id); err != nil {
					return nil, true, err
				}
			}
			if keep {
				allow.set(uint64(id))
			}
		}
	}
	return allow, true, nil
}

// column is the index's metadata column, nil when it has none up to date
// (or the Metadata does not come from the store).
func (r *filterRun) column() (*store.MetaColumn, error) {
	if !r.colRead {
		r.colRead = true
		if src, ok := r.md.(columnSource); ok {
			r.col, r.colErr = src.MetaColumn()
		}
	}
	return r.col, r.colErr
}

// bitsetFor is a bitset that holds every vector id of chunks.
func bitsetFor(chunks []store.Chunk) bitset {
	if len(chunks) == 0 {
		return newBitset(0)
	}
	last := uint64(chunks[len(chunks)-1].First) + store.ChunkSlots
	return make(bitset, last/64+2)
}

// dated is a vector the column keeps, or (rec > 0) the record
// exact[rec-1] tested on its own, or (rec < 0) a vector whose files
// differ, with a capture time one of them may have. No pointers: a
// listing of every record sorts a million of them.
type dated struct {
	taken int64
	id    store.VecID
	rec   int
}

// exactRec is a record whose vector's files differ (ColMixed).
type exactRec struct {
	path string
	meta *store.Meta
}

// listColumn is List read from the metadata column: one pass marks the
// kept vectors with their dates, a sort orders them, and only the records
// of the first k are read. ok is false, to read the records instead, when
// the index has no column or when fewer than k dated records match and
// undated ones follow them (listed in path order, which the column does
// not hold).
func (r *filterRun) listColumn(k int, order Order, frames bool) (out []Result, ok bool, err error) {
	col, err := r.column()
	if err != nil || col == nil {
		return nil, false, err
	}
	chunks, err := r.s.Chunks()
	if err != nil {
		return nil, false, err
	}
	under, err := underAllow(r.s, chunks, r.under)
	if err != nil {
		return nil, false, err
	}
	cf := newColFilter(r.m, col)
	vr := col.VariantReader()
	live := 0
	for _, c := range chunks {
		live += c.LiveCount()
	}
	cands := make([]dated, 0, live)
	var exact []exactRec
	undated := false
	for _, c := range chunks {
		ch, has := col.Chunk(c.First)
		for slot := range store.ChunkSlots {
			if !c.Live(slot) {
				continue
			}
			id := c.First + store.VecID(slot)
			if under != nil && !under.has(uint64(id)) {
				continue
			}
			if has && ch.Flags(slot)&store.ColMixed == 0 {
				switch {
				case !cf.keeps(ch, slot):
				case ch.Flags(slot)&store.ColDate != 0:
					cands = append(cands, dated{taken: ch.Taken(slot), id: id})
				default:
					undated = true
				}
				continue
			}
			if has {
				// Its files differ: a candidate at each date of a variant
				// that passes, whose records are read if it is listed.
				if v, ok := vr.Variants(id); ok {
					for i := range v.Len() {
						switch {
						case !cf.keeps(v, i):
						case v.Flags(i)&store.ColDate != 0:
							cands = append(cands, dated{taken: v.Taken(i), id: id, rec: -1})
						default:
							undated = true
						}
					}
					continue
				}
			}
			for _, p := range r.s.Paths(id) { // no column: each file on its own
				m, keep, err := r.record(p)
				if err != nil {
					return nil, false, err
				}
				switch {
				case !keep:
				case m != nil && m.TakenSource != "":
					exact = append(exact, exactRec{p, m})
					cands = append(cands, dated{taken: m.Taken, id: id, rec: len(exact)})
				default:
					undated = true
				}
			}
		}
	}
	before := func(a, b dated) int {
		if order == ByDateDesc {
			return cmp.Compare(b.taken, a.taken)
		}
		return cmp.Compare(a.taken, b.taken)
	}
	if len(cands) > 16*k {
		// Most of them come after the first k: order only those up to the
		// 4k-th date (videos listed once may skip a few), the rest when
		// they run out.
		head := firstDates(cands, 4*k, before)
		slices.SortFunc(head, before)
		if out, ok, err := r.listDated(head, exact, k, order, frames); err != nil || ok && len(out) == k {
			return out, ok, err
		}
	}
	slices.SortFunc(cands, before)
	out, ok, err = r.listDated(cands, exact, k, order, frames)
	if err != nil || ok && len(out) < k && undated {
		return nil, false, err
	}
	return out, ok, nil
}

// firstDates moves the records dated at or before the n-th in order
// (before) to the front of cands and returns them, unordered.
func firstDates(cands []dated, n int, before func(a, b dated) int) []dated {
	// Quickselect for the n-th date, then one partition by it.
	lo, hi := 0, len(cands)-1
	for lo < hi {
		p := cands[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for before(cands[i], p) < 0 {
				i++
			}
			for before(cands[j], p) > 0 {
				j--
			}
			if i <= j {
				cands[i], cands[j] = cands[j], cands[i]
				i, j = i+1, j-1
			}
		}
		switch {
		case n-1 <= j:
			hi = j
		case n-1 >= i:
			lo = i
		default:
			lo = hi
		}
	}
	nth := cands[n-1]
	m := 0
	for i := range cands {
		if before(cands[i], nth) <= 0 {
			cands[m], cands[i] = cands[i], cands[m]
			m++
		}
	}
	return cands[:m]
}

// listDated lists the records of cands (ordered by date) as List does, at
// most k; ok false when a record could not be read.
func (r *filterRun) listDated(cands []dated, exact []exactRec, k int, order Order, frames bool) (out []Result, ok bool, err error) {
	type rec struct {
		path string
		id   store.VecID
		meta *store.Meta
	}
	seen := map[string]bool{} // videos listed (by their first frame in this order), unless frames
	for i := 0; i < len(cands) && len(out) < k; {
		// The records of one capture second, ordered as List orders them
		// (sub-second time, then path).
		j, t := i, cands[i].taken
		var recs []rec
		var mixed map[store.VecID]bool // read at this date already
		for ; j < len(cands) && cands[j].taken == t; j++ {
			x := cands[j]
			if x.rec > 0 {
				recs = append(recs, rec{exact[x.rec-1].path, x.id, exact[x.rec-1].meta})
				continue
			}
			if x.rec < 0 {
				if mixed[x.id] {
					continue
				}
				if mixed == nil {
					mixed = map[store.VecID]bool{}
				}
				mixed[x.id] = true
			}
			for _, p := range r.s.Paths(x.id) {
				m, keep, err := r.record(p)
				if err != nil {
					return nil, false, err
				}
				if keep && (x.rec == 0 || m != nil && m.TakenSource != "" && m.Taken == t) {
					recs = append(recs, rec{p, x.id, m})
				}
			}
		}
		slices.SortFunc(recs, func(a, b rec) int {
			return cmp.Or(byDate(a.meta, b.meta, order), byPath(a.path, b.path))
		})
		for _, x := range recs {
			if len(out) == k {
				break
			}
			if v, _, isFrame := store.SplitFrame(x.path); isFrame && !frames {
				if seen[v] {
					continue
				}
				seen[v] = true
			}
			out = append(out, Result{Path: x.path, ID: x.id, Meta: x.meta})
		}
		i = j
	}
	return out, true, nil
}

// record reads the metadata of the record at path (nil when it has none)
// and whether the filter (and Under) keeps it.
func (r *filterRun) record(path string) (*store.Meta, bool, error) {
	if !underAny(path, r.under) || !r.m.f.KeepsPath(path) {
		return nil, false, nil
	}
	m, ok, err := r.md.Meta(path)
	if err != nil || !ok {
		return nil, err == nil && !r.m.f.NeedsMeta(), err
	}
	return &m, r.m.match(path, &m), nil
}
