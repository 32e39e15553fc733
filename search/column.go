package search

import "github.com/clipidx/clipidx/store"

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
	camOK   []bool // by camera id (0 = none)
}

func newColFilter(x *matcher, col *store.MetaColumn) *colFilter {
	f := x.f
	cf := &colFilter{f: f, meta: f.NeedsMeta(), dated: f.HasAfter || f.HasBefore || len(f.Years) > 0}
	if len(f.Places) > 0 {
		cf.placeOK = make([]bool, len(col.Places)+1)
		for i, p := range col.Places {
			cf.placeOK[i+1] = x.place(p.City) || x.place(p.Region) || x.place(p.Country) || x.code(p.CountryCode)
		}
	}
	if len(f.Cameras) > 0 {
		cf.camOK = make([]bool, len(col.Cameras)+1)
		for i, c := range col.Cameras {
			cf.camOK[i+1] = x.camera(c.Make, c.Model)
		}
	}
	return cf
}

// keeps reports whether the files of slot i (not ColMixed: they agree on
// everything a filter reads) pass the filter; it decides as matcher.match
// does on their records.
func (cf *colFilter) keeps(ch store.ColumnChunk, i int) bool {
	fl, f := ch.Flags(i), cf.f
	switch f.Kinds {
	case KindPhoto:
		if fl&store.ColPhoto == 0 {
			return false
		}
	case KindVideo:
		if fl&store.ColVideo == 0 {
			return false
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
			keep := false
			if has && ch.Flags(slot)&store.ColMixed == 0 {
				keep = cf.keeps(ch, slot)
			} else if keep, err = r.allowed(id); err != nil {
				return nil, true, err
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
