package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Batch is an ordered list of changes committed in one transaction.
type Batch struct {
	ops []op
}

type opKind uint8

const (
	opPut opKind = iota
	opDelete
	opSample // see sample.go
	opShard
	opMeta // see meta.go
	opPlaces
	opVideoMeta
	opVideoRead
	opMetaRead
	opCtime // see ctime.go
)

type op struct {
	kind   opKind
	path   string
	file   File
	vec    []float32
	sample *Sample
	meta   *Meta
}

// Put records path as indexed with content f.Hash. When vec is nil the
// vector stored for that hash is reused (Commit fails with ErrNoVector when
// there is none); otherwise vec (length Dim, normalised by the store) is
// stored, unless a vector for the same hash exists already, which is reused.
// A File with a non-empty Err records a failure instead, and vec is ignored.
func (b *Batch) Put(path string, f File, vec []float32) {
	f.Vec = 0
	b.ops = append(b.ops, op{kind: opPut, path: path, file: f, vec: vec})
}

// Delete forgets path. Its vector, if no other file uses it, is queued
// for GC (Writer.GC, Writer.GCQueuedBefore).
func (b *Batch) Delete(path string) {
	b.ops = append(b.ops, op{kind: opDelete, path: path})
}

// Len is the number of changes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch for reuse.
func (b *Batch) Reset() { b.ops = b.ops[:0] }

// wtx wraps a read-write transaction with the buckets and the dimension.
type wtx struct {
	tx                                                *bolt.Tx
	meta, files, refs, hashes, vecs, chunks, free, gc *bolt.Bucket
	dim                                               int
	chunk                                             map[uint32][]byte  // modified chunk copies, written at flush
	images, failed, vectors                           int64              // counter deltas
	dirty                                             map[VecID]struct{} // see dirtyVec; nil outside Writer.update
	now                                               int64              // Unix seconds: when unref queues a vector
}

func newWtx(tx *bolt.Tx, dim int) *wtx {
	w := &wtx{
		tx: tx, dim: dim,
		meta: tx.Bucket(bMeta), files: tx.Bucket(bFiles), refs: tx.Bucket(bRefs),
		hashes: tx.Bucket(bHashes), vecs: tx.Bucket(bVecs), chunks: tx.Bucket(bChunks),
		free: tx.Bucket(bFree), gc: tx.Bucket(bGC),
		chunk: map[uint32][]byte{},
		now:   time.Now().Unix(),
	}
	if d, ok := colDirty.Load(tx); ok {
		w.dirty = d.(map[VecID]struct{})
	}
	return w
}

// apply applies o, then keeps the Live flag of the metadata of a still
// whose Live Photo movie record o wrote or removed (syncLiveMeta).
func (w *wtx) apply(o op) error {
	switch o.kind {
	case opCtime:
		return w.stampCtime(o)
	case opPut, opDelete:
	default:
		return w.applyExtra(o)
	}
	old, ok, err := w.getFile(o.path)
	if err != nil {
		return err
	}
	var stills []string
	if ok {
		stills = appendLiveStill(stills, o.path, old)
	}
	if o.kind == opPut {
		stills = appendLiveStill(stills, o.path, o.file)
		err = w.put(o, old, ok)
	} else if ok {
		err = w.delete(o.path, old)
	}
	if err != nil {
		return err
	}
	for _, s := range stills {
		if err := w.refreshLive(s); err != nil {
			return err
		}
	}
	return nil
}

// appendLiveStill appends the still that f, the record of movie, names as
// its Live Photo's (File.LiveVideo), if any.
func appendLiveStill(stills []string, movie string, f File) []string {
	if name, ok := f.LiveVideo(); ok {
		return append(stills, filepath.Join(filepath.Dir(movie), name))
	}
	return stills
}

// delete drops the record old of path, with its ctime, sample and
// metadata, and its link to its vector.
func (w *wtx) delete(path string, old File) error {
	if err := w.putCtime(path, 0); err != nil {
		return err
	}
	if err := w.unref(path, old); err != nil {
		return err
	}
	if err := w.deleteSample(path); err != nil {
		return err
	}
	if err := w.deleteMeta(path); err != nil {
		return err
	}
	return w.files.Delete([]byte(path))
}

// put writes the record of o.path, which was old when had.
func (w *wtx) put(o op, old File, had bool) error {
	f := o.file
	if err := w.putCtime(o.path, f.CtimeNs); err != nil {
		return err
	}
	if f.Err == "" {
		id, err := w.resolve(f.Hash, o.vec)
		if err != nil {
			return fmt.Errorf("%s: %w", o.path, err)
		}
		f.Vec = id
	}
	if had {
		if old.Vec == f.Vec && f.Vec != 0 {
			// Same content: only the stat changed; keep the ref.
			return w.files.Put([]byte(o.path), encodeFile(f))
		}
		if err := w.unref(o.path, old); err != nil {
			return err
		}
	}
	if f.Vec != 0 {
		if err := w.refs.Put(refKey(f.Vec, o.path), nil); err != nil {
			return err
		}
		w.dirtyVec(f.Vec)
		// A vector queued for GC is alive again: searchable once more.
		if key := u64(uint64(f.Vec)); has(w.gc, key) {
			if err := w.gc.Delete(key); err != nil {
				return err
			}
			w.setLive(f.Vec, true)
		}
		w.images++
	} else {
		w.failed++
		if err := w.deleteMeta(o.path); err != nil { // a failed file has no metadata
			return err
		}
	}
	return w.files.Put([]byte(o.path), encodeFile(f))
}

func (w *wtx) getFile(path string) (File, bool, error) {
	v := w.files.Get([]byte(path))
	if v == nil {
		return File{}, false, nil
	}
	f, err := decodeFile(v)
	if err != nil {
		return f, false, fmt.Errorf("record of %s: %w", path, err)
	}
	return f, true, nil
}

// unref drops the link from path to its old vector (or its failure count).
func (w *wtx) unref(path string, old File) error {
	if old.Vec == 0 {
		w.failed--
		return nil
	}
	w.images--
	if err := w.refs.Delete(refKey(old.Vec, path)); err != nil {
		return err
	}
	w.dirtyVec(old.Vec)
	prefix := u64(uint64(old.Vec))
	if k, _ := w.refs.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		return nil // still used by another file
	}
	// Queued for GC: the slot keeps its values (a file seen later, in this
	// build or a later one, may reuse them: a photo moved to a folder not
	// built yet) but leaves the live set, so that searches never rank a
	// vector without a file. The value is when it was queued (collect).
	w.setLive(old.Vec, false)
	return w.gc.Put(prefix, u64(uint64(w.now)))
}

// has reports whether key is in b. (Get cannot tell: a nil value put in
// the same transaction reads back as nil.)
func has(b *bolt.Bucket, key []byte) bool {
	k, _ := b.Cursor().Seek(key)
	return k != nil && bytes.Equal(k, key)
}

// setLive sets or clears id's live bit, keeping the slot's values.
func (w *wtx) setLive(id VecID, live bool) {
	buf, slot := w.chunkFor(id)
	if bit := byte(1) << (slot % 8); live {
		buf[slot/8] |= bit
	} else {
		buf[slot/8] &^= bit
	}
}

// resolve returns the vector id for content h, storing vec when needed.
func (w *wtx) resolve(h Hash, vec []float32) (VecID, error) {
	if v := w.hashes.Get(h[:]); v != nil {
		return VecID(getU64(v)), nil
	}
	if vec == nil {
		return 0, ErrNoVector
	}
	unit, err := normalized(vec, w.dim)
	if err != nil {
		return 0, err
	}
	id, err := w.alloc()
	if err != nil {
		return 0, err
	}
	if err := w.writeSlot(id, unit, true); err != nil {
		return 0, err
	}
	if err := w.hashes.Put(h[:], u64(uint64(id))); err != nil {
		return 0, err
	}
	w.vectors++
	return id, w.vecs.Put(u64(uint64(id)), h[:])
}

func normalized(v []float32, dim int) ([]float32, error) {
	if len(v) != dim {
		return nil, fmt.Errorf("%w: length %d, want %d", ErrBadVector, len(v), dim)
	}
	return Normalize(v)
}

// Normalize returns v scaled to unit L2 norm (a new slice), computed in
// float64. It returns an error wrapping ErrBadVector when a component is
// NaN or infinite or every component is zero. It is the tree's one vector
// check: store applies it to what it stores, search to queries and index
// to what an encoder returns.
func Normalize(v []float32) ([]float32, error) {
	var s float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: component %d is %v", ErrBadVector, i, x)
		}
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return nil, fmt.Errorf("%w: zero norm", ErrBadVector)
	}
	inv := 1 / math.Sqrt(s)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, nil
}

// IsUnit reports whether v has norm 1 within float32 rounding, as every
// vector the index stores has (Normalize); a stored vector that is not
// was damaged on disk (a flipped bit), and Check reports it.
func IsUnit(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Abs(s-1) <= 1e-4 // false for NaN too
}

// alloc takes a freed slot if there is one, else a fresh id.
func (w *wtx) alloc() (VecID, error) {
	if k, _ := w.free.Cursor().First(); k != nil {
		id := VecID(getU64(k))
		return id, w.free.Delete(k)
	}
	next := getU64(w.meta.Get(kNext))
	if next == 0 {
		next = 1
	}
	return VecID(next), w.meta.Put(kNext, u64(next+1))
}

// chunkFor returns a writable copy of the chunk holding id.
func (w *wtx) chunkFor(id VecID) ([]byte, int) {
	c := uint32((id - 1) / ChunkSlots)
	slot := int((id - 1) % ChunkSlots)
	buf, ok := w.chunk[c]
	if !ok {
		buf = make([]byte, chunkSize(w.dim))
		copy(buf, w.chunks.Get(chunkKey(c)))
		w.chunk[c] = buf
	}
	return buf, slot
}

// writeSlot stores unit in id's slot (live) or clears it (live false).
func (w *wtx) writeSlot(id VecID, unit []float32, live bool) error {
	buf, slot := w.chunkFor(id)
	bit := byte(1) << (slot % 8)
	if live {
		buf[slot/8] |= bit
	} else {
		buf[slot/8] &^= bit
	}
	hiOff := ChunkSlots/8 + slot*w.dim*2
	loOff := ChunkSlots/8 + ChunkSlots*w.dim*2 + slot*w.dim*2
	for i := 0; i < w.dim; i++ {
		var hi, lo uint16
		if live {
			hi, lo = Split(unit[i])
		}
		binary.LittleEndian.PutUint16(buf[hiOff+2*i:], hi)
		binary.LittleEndian.PutUint16(buf[loOff+2*i:], lo)
	}
	return nil
}

// flush writes modified chunks and counters.
func (w *wtx) flush() error {
	for c, buf := range w.chunk {
		if err := w.chunks.Put(chunkKey(c), buf); err != nil {
			return err
		}
	}
	if w.meta.Get(kVectors) == nil {
		// An index from before the counter: count once with a cursor,
		// which sees this transaction's changes (the deltas are already
		// in the bucket), then keep it up to date.
		n := 0
		c := w.vecs.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		if err := w.meta.Put(kVectors, u64(uint64(n))); err != nil {
			return err
		}
		w.vectors = 0
	}
	for _, kv := range []struct {
		k []byte
		d int64
	}{{kImages, w.images}, {kFailed, w.failed}, {kVectors, w.vectors}} {
		if kv.d == 0 {
			continue
		}
		n := int64(getU64(w.meta.Get(kv.k))) + kv.d
		if n < 0 {
			return fmt.Errorf("%w: counter %s below zero", ErrCorrupt, kv.k)
		}
		if err := w.meta.Put(kv.k, u64(uint64(n))); err != nil {
			return err
		}
	}
	return nil
}

// collect frees every vector queued in the gc bucket that no file uses,
// except, when keepSince > 0, those queued at or after keepSince (Unix
// seconds). A queue entry without a time (written before entries had one)
// counts as queued long ago.
func (w *wtx) collect(keepSince int64) (int, error) {
	var ids []VecID
	c := w.gc.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if keepSince > 0 && len(v) == 8 && int64(getU64(v)) >= keepSince {
			continue
		}
		ids = append(ids, VecID(getU64(k)))
	}
	n := 0
	for _, id := range ids {
		key := u64(uint64(id))
		if err := w.gc.Delete(key); err != nil {
			return n, err
		}
		if k, _ := w.refs.Cursor().Seek(key); k != nil && bytes.HasPrefix(k, key) {
			continue
		}
		h := w.vecs.Get(key)
		if h == nil {
			continue
		}
		if err := w.hashes.Delete(bytes.Clone(h)); err != nil {
			return n, err
		}
		if err := w.vecs.Delete(key); err != nil {
			return n, err
		}
		w.vectors--
		if err := w.writeSlot(id, nil, false); err != nil {
			return n, err
		}
		if err := w.free.Put(key, nil); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
