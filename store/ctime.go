package store

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// The optional ctimes bucket holds, for a file record, the file's status
// change time (ctime, ns) when the record was written: path → u64. A
// file's ctime moves whenever its bytes or its name change, even when a
// tool puts its size and mtime back (exiftool -P, a rename of two files of
// one size and time into each other's names), so a build reads again a
// file whose ctime moved. It lives beside the record, not in it, so that
// an older clipidx still reads every record; one that rewrites a record
// leaves its old ctime, which differs from the file's and costs one read.
var bCtimes = []byte("ctimes")

func init() { optionalBuckets = append(optionalBuckets, bCtimes) }

// putCtime records ns as path's ctime, or drops what was recorded when ns
// is 0 (not known).
func (w *wtx) putCtime(path string, ns int64) error {
	if ns == 0 {
		return deleteIn(w.tx, bCtimes, path)
	}
	bk, err := w.tx.CreateBucketIfNotExists(bCtimes)
	if err != nil {
		return err
	}
	return bk.Put([]byte(path), u64(uint64(ns)))
}

// StampCtime records ns as the ctime of the record at path, whose stat
// is otherwise unchanged: a record written without one (by an older
// clipidx) takes the file's, so that later changes are seen. A path
// without a record is left alone (it went since).
func (b *Batch) StampCtime(path string, ns int64) {
	b.ops = append(b.ops, op{kind: opCtime, path: path, file: File{CtimeNs: ns}})
}

func (w *wtx) stampCtime(o op) error {
	if w.files.Get([]byte(o.path)) == nil {
		return nil
	}
	return w.putCtime(o.path, o.file.CtimeNs)
}

// ctimeOf is the ctime recorded for path, 0 when none.
func (s *Snapshot) ctimeOf(path string) int64 {
	return int64(markIn(s.tx, bCtimes, path))
}

// ctimeReader reads the ctimes bucket along a walk of the files bucket in
// key order: one cursor stepped forward, not a lookup a record.
type ctimeReader struct {
	c    *bolt.Cursor
	k, v []byte
	on   bool
}

func (s *Snapshot) ctimeReader() *ctimeReader {
	bk := s.tx.Bucket(bCtimes)
	if bk == nil {
		return nil
	}
	return &ctimeReader{c: bk.Cursor()}
}

// at is the ctime recorded for key, 0 when none; keys asked for in
// ascending order are read by stepping the cursor.
func (r *ctimeReader) at(key []byte) int64 {
	if r == nil {
		return 0
	}
	if !r.on || r.k != nil && bytes.Compare(r.k, key) > 0 {
		r.k, r.v = r.c.Seek(key)
		r.on = true
	}
	for steps := 0; r.k != nil && bytes.Compare(r.k, key) < 0; steps++ {
		if steps == 8 { // far ahead: seek
			r.k, r.v = r.c.Seek(key)
			break
		}
		r.k, r.v = r.c.Next()
	}
	if r.k != nil && bytes.Equal(r.k, key) && len(r.v) == 8 {
		return int64(binary.BigEndian.Uint64(r.v))
	}
	return 0
}

// checkCtimes reports ctimes that are not 8 bytes. One without a record
// is no fault: a clipidx from before them deletes records and leaves
// their ctimes.
func (s *Snapshot) checkCtimes(bad func(format string, a ...any)) {
	if bk := s.tx.Bucket(bCtimes); bk != nil {
		bk.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				bad("%v: ctime of %s is %d bytes, want 8", ErrCorrupt, k, len(v))
			}
			return nil
		})
	}
}
