package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Optional buckets, created by the first write that needs them (an index
// without them is a valid schema-1 index: readers treat them as empty).
//
//	samples  path → Sample: caption, JSON metadata and caption vector of a
//	         dataset sample (webdataset input); deleted with its file record
//	shards   tar shard path → size u64 ‖ mtime ns u64 ‖ ctime ns u64 of
//	         the shard when all its samples were last committed (skip an
//	         unchanged shard); 16 bytes, without the ctime, when it is not
//	         known (Windows, or a record written before ctimes were kept)
var (
	bSamples = []byte("samples")
	bShards  = []byte("shards")

	optionalBuckets = [][]byte{bSamples, bShards}
)

// Sample is the metadata of a dataset sample kept beside its file record:
// the caption (.txt member), the JSON member as read (a JSON object, or
// nil) and, when captions were embedded, the caption's vector (unit norm,
// length Dim; nil otherwise).
type Sample struct {
	Caption string
	JSON    []byte
	Text    []float32
}

// SampleSep separates a tar shard's path from a sample's key in the path
// the index records for a webdataset sample (SHARD.tar#KEY).
const SampleSep = "#"

// IsShardName reports whether path names a tar shard: its name ends in
// .tar, in any case.
func IsShardName(path string) bool {
	return len(path) >= 4 && strings.EqualFold(path[len(path)-4:], ".tar")
}

// NamesSample reports whether path is the path of a webdataset sample,
// SHARD.tar#KEY, or of a shard itself. A key is a member's name up to the
// first dot of its base name, so the base name of KEY holds no dot (but
// at its start, the key of a member misnamed ".x"); a file whose own name
// holds the separator ("clip#1.mp4", "backup.tar#2.mp4") keeps its
// extension there.
func NamesSample(path string) bool {
	if IsShardName(path) {
		return true
	}
	for i := range len(path) {
		if path[i] != SampleSep[0] || !IsShardName(path[:i]) {
			continue
		}
		key := path[i+1:]
		base := key[strings.LastIndexAny(key, `/\`)+1:]
		if len(base) == 0 || !strings.Contains(base[1:], ".") {
			return true
		}
	}
	return false
}

// ShardStat is what the index remembers of a tar shard read completely.
// CtimeNs is its status change time then, 0 when not known (no ctime is
// read on Windows; a record written before ctimes were kept has none).
type ShardStat struct {
	Size    int64
	MtimeNs int64
	CtimeNs int64
}

// Same reports whether st and other are the same version of a shard: the
// same size and mtime, and the same ctime where both know it (0 is
// unknown), as a build compares a shard with its record.
func (st ShardStat) Same(other ShardStat) bool {
	return st.Size == other.Size && st.MtimeNs == other.MtimeNs &&
		(st.CtimeNs == other.CtimeNs || st.CtimeNs == 0 || other.CtimeNs == 0)
}

const sampleVersion = 1

func encodeSample(s Sample) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(s.Caption)+len(s.JSON)+4*len(s.Text))
	b = append(b, sampleVersion)
	b = binary.AppendUvarint(b, uint64(len(s.Caption)))
	b = append(b, s.Caption...)
	b = binary.AppendUvarint(b, uint64(len(s.JSON)))
	b = append(b, s.JSON...)
	b = binary.AppendUvarint(b, uint64(len(s.Text)))
	for _, x := range s.Text {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func decodeSample(b []byte) (Sample, error) {
	var s Sample
	if len(b) < 1 || b[0] != sampleVersion {
		return s, ErrCorrupt
	}
	b = b[1:]
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		f := b[k : k+int(n)]
		b = b[k+int(n):]
		return f, true
	}
	c, ok1 := field()
	j, ok2 := field()
	if !ok1 || !ok2 {
		return s, ErrCorrupt
	}
	s.Caption = string(c)
	if len(j) > 0 {
		s.JSON = append([]byte(nil), j...)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k)/4 || uint64(len(b)-k) != 4*n {
		return s, ErrCorrupt
	}
	b = b[k:]
	if n > 0 {
		s.Text = make([]float32, n)
		for i := range s.Text {
			s.Text[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return s, nil
}

// PutSample records the metadata of path (recorded by a Put of the same
// batch or an earlier one). A Text vector is normalised by the store and
// must have the index's dimension.
func (b *Batch) PutSample(path string, s Sample) {
	b.ops = append(b.ops, op{kind: opSample, path: path, sample: &s})
}

// PutShard records that every sample of the tar shard at path has been
// committed while the shard had stat st.
func (b *Batch) PutShard(path string, st ShardStat) {
	b.ops = append(b.ops, op{kind: opShard, path: path, file: File{Size: st.Size, MtimeNs: st.MtimeNs, CtimeNs: st.CtimeNs}})
}

// DeleteShard forgets the stat of a shard (its samples are deleted one by
// one with Delete).
func (b *Batch) DeleteShard(path string) {
	b.ops = append(b.ops, op{kind: opShard, path: path, file: File{Size: -1}})
}

// applyExtra applies the operations on the optional buckets.
func (w *wtx) applyExtra(o op) error {
	switch o.kind {
	case opMeta, opPlaces, opVideoMeta, opVideoRead, opMetaRead:
		return w.applyMeta(o)
	case opSample:
		s := *o.sample
		if s.Text != nil {
			unit, err := normalized(s.Text, w.dim)
			if err != nil {
				return fmt.Errorf("caption vector of %s: %w", o.path, err)
			}
			s.Text = unit
		}
		bk, err := w.tx.CreateBucketIfNotExists(bSamples)
		if err != nil {
			return err
		}
		return bk.Put([]byte(o.path), encodeSample(s))
	case opShard:
		if o.file.Size < 0 {
			if bk := w.tx.Bucket(bShards); bk != nil {
				return bk.Delete([]byte(o.path))
			}
			return nil
		}
		bk, err := w.tx.CreateBucketIfNotExists(bShards)
		if err != nil {
			return err
		}
		return bk.Put([]byte(o.path), encodeShard(ShardStat{Size: o.file.Size, MtimeNs: o.file.MtimeNs, CtimeNs: o.file.CtimeNs}))
	}
	return fmt.Errorf("store: unknown batch operation %d", o.kind)
}

// deleteSample drops the metadata of path, if any.
func (w *wtx) deleteSample(path string) error {
	if bk := w.tx.Bucket(bSamples); bk != nil {
		return bk.Delete([]byte(path))
	}
	return nil
}

// Sample returns the metadata recorded for path.
func (s *Snapshot) Sample(path string) (Sample, bool, error) {
	bk := s.tx.Bucket(bSamples)
	if bk == nil {
		return Sample{}, false, nil
	}
	v := bk.Get([]byte(path))
	if v == nil {
		return Sample{}, false, nil
	}
	smp, err := decodeSample(v)
	if err != nil {
		return smp, false, fmt.Errorf("sample record of %s: %w", path, err)
	}
	return smp, true, nil
}

// HasSamples reports whether any sample metadata is recorded.
func (s *Snapshot) HasSamples() bool {
	bk := s.tx.Bucket(bSamples)
	if bk == nil {
		return false
	}
	k, _ := bk.Cursor().First()
	return k != nil
}

// Shard returns the stat recorded for a tar shard.
func (s *Snapshot) Shard(path string) (ShardStat, bool) {
	bk := s.tx.Bucket(bShards)
	if bk == nil {
		return ShardStat{}, false
	}
	return decodeShard(bk.Get([]byte(path)))
}

// encodeShard writes a shard's stat: its ctime, when known, after the
// size and mtime. Without one it is the 16 bytes an older clipidx reads;
// with one, such a clipidx takes the shard for unrecorded and reads it
// again (by content hash: no model pass), once.
func encodeShard(st ShardStat) []byte {
	v := binary.BigEndian.AppendUint64(u64(uint64(st.Size)), uint64(st.MtimeNs))
	if st.CtimeNs != 0 {
		v = binary.BigEndian.AppendUint64(v, uint64(st.CtimeNs))
	}
	return v
}

// decodeShard reads a shard's stat, with or without its ctime; ok is
// false for a value of neither length.
func decodeShard(v []byte) (st ShardStat, ok bool) {
	if len(v) != 16 && len(v) != 24 {
		return ShardStat{}, false
	}
	st = ShardStat{Size: int64(binary.BigEndian.Uint64(v)), MtimeNs: int64(binary.BigEndian.Uint64(v[8:]))}
	if len(v) == 24 {
		st.CtimeNs = int64(binary.BigEndian.Uint64(v[16:]))
	}
	return st, true
}

// FilesPrefix calls fn for every file record whose path starts with
// prefix, in path order (the samples "SHARD.tar#KEY" of a shard).
func (s *Snapshot) FilesPrefix(prefix string, fn func(path string, f File) error) error {
	c := s.tx.Bucket(bFiles).Cursor()
	ct := s.ctimeReader()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && len(k) >= len(p) && string(k[:len(p)]) == prefix; k, v = c.Next() {
		f, err := decodeFile(v)
		if err != nil {
			return fmt.Errorf("record of %s: %w", k, err)
		}
		f.CtimeNs = ct.at(k)
		if err := fn(string(k), f); err != nil {
			return err
		}
	}
	return nil
}

// VectorInto copies vector id into dst (length Dim) and reports whether it
// is stored and live. It allocates nothing: exports call it per row.
func (s *Snapshot) VectorInto(id VecID, dst []float32) bool {
	hi, lo, ok := s.VectorHalves(id)
	if !ok || len(dst) != s.id.Dim {
		return false
	}
	for i := range dst {
		dst[i] = Join(binary.LittleEndian.Uint16(hi[2*i:]), binary.LittleEndian.Uint16(lo[2*i:]))
	}
	return true
}

// wipeOptional deletes the optional buckets (a reindex starts over).
func wipeOptional(tx *bolt.Tx) error {
	for _, b := range optionalBuckets {
		if tx.Bucket(b) != nil {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// VectorHalves returns the stored halves of vector id (see Chunk): dim
// little-endian u16 upper halves and dim lower halves, aliasing the
// database map (read only, valid inside the View; they may be read from
// other goroutines meanwhile). ok is false when id is not stored and live.
func (s *Snapshot) VectorHalves(id VecID) (hi, lo []byte, ok bool) {
	if id == 0 {
		return nil, nil, false
	}
	v := s.tx.Bucket(bChunks).Get(chunkKey(uint32((id - 1) / ChunkSlots)))
	slot := int((id - 1) % ChunkSlots)
	if len(v) != chunkSize(s.id.Dim) || v[slot/8]&(1<<(slot%8)) == 0 {
		return nil, nil, false
	}
	d := s.id.Dim
	return v[ChunkSlots/8+slot*d*2:][:2*d], v[ChunkSlots/8+ChunkSlots*d*2+slot*d*2:][:2*d], true
}

// checkSamples reports sample records that do not decode, have no file
// record, or hold a caption vector that is not a unit vector of the
// index's dimension (see Check).
func (s *Snapshot) checkSamples(bad func(format string, a ...any)) {
	bk := s.tx.Bucket(bSamples)
	if bk == nil {
		return
	}
	files := s.tx.Bucket(bFiles)
	bk.ForEach(func(k, v []byte) error {
		smp, err := decodeSample(v)
		switch {
		case err != nil:
			bad("sample %s: %v", k, err)
		case files.Get(k) == nil:
			bad("sample %s: no file record", k)
		case smp.Text != nil && len(smp.Text) != s.id.Dim:
			bad("sample %s: caption vector of length %d, want %d", k, len(smp.Text), s.id.Dim)
		case smp.Text != nil:
			var n float64
			for _, x := range smp.Text {
				n += float64(x) * float64(x)
			}
			if math.Abs(n-1) > 1e-4 {
				bad("sample %s: caption vector of squared norm %g", k, n)
			}
		}
		return nil
	})
}
