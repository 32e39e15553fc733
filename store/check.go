package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Check verifies every invariant of the index and returns the problems
// found, joined (nil when the index is sound):
//
//   - the bbolt pages, read from the file itself: each bucket's tree, the
//     free list, every page used once or free (see pageWalk); when these
//     are damaged, Check reports only them;
//   - each file record decodes; an indexed file names a live vector whose
//     content hash equals the file's, and a ref links them, and it carries
//     no failure kind or reach; a failed file has a reason and no vector
//     (records of version 1 and 2 alike);
//   - each ref names an existing file record that points back at it;
//   - each vector has at least one ref (no orphans, unless queued for GC
//     when allowQueued), a hashes entry pointing back at it, a chunk slot
//     holding a unit vector, live unless queued for GC, is not in the free
//     list, and is not queued while a file uses it;
//   - each live slot has a vecs entry; each free id is dead; the meta
//     counters match the records;
//   - each sample record decodes, belongs to a file record, and its
//     caption vector, if any, is a unit vector of the index's dimension;
//   - each metadata record decodes and belongs to an indexed file.
func (s *Snapshot) Check(allowQueued bool) error {
	if perrs := checkPages(s.tx.DB().Path()); len(perrs) > 0 {
		return fmt.Errorf("page structure: %w", errors.Join(perrs...))
	}
	var errs []error
	bad := func(format string, a ...any) {
		if len(errs) < 100 {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	tx := s.tx
	files, refs, hashes, vecs, free, gc := tx.Bucket(bFiles), tx.Bucket(bRefs), tx.Bucket(bHashes), tx.Bucket(bVecs), tx.Bucket(bFree), tx.Bucket(bGC)

	images, failed := 0, 0
	files.ForEach(func(k, v []byte) error {
		f, err := decodeFile(v)
		if err != nil {
			bad("file %s: %v", k, err)
			return nil
		}
		if f.Vec == 0 {
			failed++
			if f.Err == "" {
				bad("file %s: no vector and no failure reason", k)
			}
			return nil
		}
		images++
		if f.Err != "" || f.Kind != "" || f.Reach != "" {
			bad("file %s: has vector %d and failure %q (kind %q)", k, f.Vec, f.Err, f.Kind)
		}
		if h := vecs.Get(u64(uint64(f.Vec))); h == nil {
			bad("file %s: vector %d missing", k, f.Vec)
		} else if !bytes.Equal(h, f.Hash[:]) {
			bad("file %s: content hash differs from vector %d's", k, f.Vec)
		}
		if !has(refs, refKey(f.Vec, string(k))) {
			bad("file %s: ref to vector %d missing", k, f.Vec)
		}
		return nil
	})
	m := tx.Bucket(bMeta)
	if n := int(getU64(m.Get(kImages))); n != images {
		bad("meta: images counter %d, records say %d", n, images)
	}
	if n := int(getU64(m.Get(kFailed))); n != failed {
		bad("meta: failed counter %d, records say %d", n, failed)
	}

	refCount := map[VecID]int{}
	refs.ForEach(func(k, _ []byte) error {
		if len(k) < 9 {
			bad("ref %x: too short", k)
			return nil
		}
		id, path := VecID(binary.BigEndian.Uint64(k)), string(k[8:])
		refCount[id]++
		v := files.Get([]byte(path))
		if v == nil {
			bad("ref %d → %s: no such file", id, path)
			return nil
		}
		if f, err := decodeFile(v); err == nil && f.Vec != id {
			bad("ref %d → %s: file points at vector %d", id, path, f.Vec)
		}
		return nil
	})

	next := VecID(getU64(m.Get(kNext)))
	nVecs := 0
	vecs.ForEach(func(k, h []byte) error {
		nVecs++
		id := VecID(getU64(k))
		if id == 0 || id >= next {
			bad("vector %d: outside allocated range [1,%d)", id, next)
		}
		queued := has(gc, k)
		if refCount[id] == 0 && !(allowQueued && queued) {
			bad("vector %d: orphan (no file uses it)", id)
		}
		if queued && refCount[id] > 0 {
			bad("vector %d: queued for GC but used by a file", id)
		}
		if hv := hashes.Get(h); hv == nil || VecID(getU64(hv)) != id {
			bad("vector %d: hashes entry missing or points elsewhere", id)
		}
		if has(free, k) {
			bad("vector %d: also in the free list", id)
		}
		v := s.slot(id, false)
		if v == nil && queued {
			// Queued vectors leave the live set; files written before
			// that rule kept them live, which is sound too.
			v = s.slot(id, true)
		}
		if v == nil {
			bad("vector %d: chunk slot not live", id)
			return nil
		}
		if !IsUnit(v) {
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			bad("vector %d: norm² %.6f, want 1", id, ss)
		}
		return nil
	})
	if v := m.Get(kVectors); v != nil && int(getU64(v)) != nVecs {
		bad("meta: vectors counter %d, records say %d", getU64(v), nVecs)
	}
	hashes.ForEach(func(h, v []byte) error {
		if hv := vecs.Get(v); hv == nil || !bytes.Equal(hv, h) {
			bad("hash %x: vector %d missing or computed from other content", h[:6], getU64(v))
		}
		return nil
	})
	chunks, err := s.Chunks()
	if err != nil {
		bad("%v", err)
	}
	for _, c := range chunks {
		for i := 0; i < ChunkSlots; i++ {
			id := c.First + VecID(i)
			key := u64(uint64(id))
			if c.Live(i) && vecs.Get(key) == nil {
				bad("chunk slot %d: live without a vector", id)
			}
			if !c.Live(i) && !has(free, key) && !has(gc, key) && id < next {
				bad("chunk slot %d: dead but not in the free list", id)
			}
		}
	}
	free.ForEach(func(k, _ []byte) error {
		if s.Vector(VecID(getU64(k))) != nil {
			bad("free id %d: slot still live", getU64(k))
		}
		return nil
	})
	s.checkSamples(bad)
	s.checkMeta(bad)
	s.checkCtimes(bad)
	s.checkColumn(bad)
	return errors.Join(errs...)
}

// Check opens the index at path read-only and runs Snapshot.Check with
// allowQueued true: a vector no file uses must be queued (a build keeps
// them for a while, see Writer.GCQueuedBefore), never lost track of.
func Check(path string) error {
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.View(func(s *Snapshot) error { return s.Check(true) })
}
