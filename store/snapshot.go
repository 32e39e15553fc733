package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Snapshot is a consistent read-only view of the index, valid inside
// Reader.View (or Writer.View) only.
type Snapshot struct {
	tx *bolt.Tx
	id Identity
}

// Identity is the model identity recorded in the index.
func (s *Snapshot) Identity() Identity { return s.id }

// Generation tells this snapshot's index apart from any other state of
// it, or from another file put at its path: the transaction id of its
// last commit, the file's size and the last build's record, all as this
// snapshot sees them (a stat of the path may already see a file moved
// there since the snapshot began).
func (s *Snapshot) Generation() string {
	lb := s.tx.Bucket(bMeta).Get(kLastBuild)
	return fmt.Sprintf("%d/%d/%x", s.tx.ID(), s.tx.Size(), sha256.Sum256(lb))
}

// Dim is the vector dimension.
func (s *Snapshot) Dim() int { return s.id.Dim }

// Stats summarises the index.
type Stats struct {
	Images    int        // files with a vector
	Failed    int        // files recorded as failures
	Vectors   int        // distinct stored vectors, Queued included
	Queued    int        // of Vectors, those no file uses any more, kept for a while (Writer.GCQueuedBefore)
	Bytes     int64      // size of the database file
	LastBuild *LastBuild // nil before the first finished build
}

// Stats reads the counters kept in the meta bucket (no scan, except for
// Vectors in an index no build has written to since the counter was added)
// and counts the gc bucket (the vectors no file uses: up to KeepUnused's
// worth of removals).
func (s *Snapshot) Stats() (Stats, error) {
	m := s.tx.Bucket(bMeta)
	st := Stats{
		Images: int(getU64(m.Get(kImages))),
		Failed: int(getU64(m.Get(kFailed))),
		Bytes:  s.tx.Size(),
	}
	if v := m.Get(kVectors); v != nil {
		st.Vectors = int(getU64(v))
	} else {
		st.Vectors = s.tx.Bucket(bVecs).Stats().KeyN
	}
	c := s.tx.Bucket(bGC).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		st.Queued++
	}
	if fi, err := os.Stat(s.tx.DB().Path()); err == nil {
		st.Bytes = fi.Size()
	}
	if v := m.Get(kLastBuild); v != nil {
		st.LastBuild = new(LastBuild)
		if err := json.Unmarshal(v, st.LastBuild); err != nil {
			return st, fmt.Errorf("%w: last build: %v", ErrCorrupt, err)
		}
		readPaths(st.LastBuild.Roots)
		readPaths(st.LastBuild.Within)
	}
	return st, nil
}

// Chunk is ChunkSlots contiguous vectors. Slot i holds vector First+i when
// Live(i); Hi holds the rounded upper halves (bfloat16, little-endian u16)
// of all slots back to back, Lo the lower halves. Both alias the database
// map: read only, valid inside the View.
type Chunk struct {
	First VecID
	live  []byte
	Hi    []byte
	Lo    []byte
}

// Live reports whether slot i holds a vector.
func (c Chunk) Live(i int) bool { return c.live[i/8]&(1<<(i%8)) != 0 }

// LiveCount is the number of live slots.
func (c Chunk) LiveCount() int {
	n := 0
	for _, b := range c.live {
		for ; b != 0; b &= b - 1 {
			n++
		}
	}
	return n
}

// Chunks returns every chunk in id order.
func (s *Snapshot) Chunks() ([]Chunk, error) {
	var out []Chunk
	want := chunkSize(s.id.Dim)
	half := ChunkSlots * s.id.Dim * 2
	c := s.tx.Bucket(bChunks).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 4 || len(v) != want {
			return nil, fmt.Errorf("%w: chunk %x has %d bytes, want %d", ErrCorrupt, k, len(v), want)
		}
		n := binary.BigEndian.Uint32(k)
		out = append(out, Chunk{
			First: VecID(uint64(n)*ChunkSlots + 1),
			live:  v[:ChunkSlots/8],
			Hi:    v[ChunkSlots/8 : ChunkSlots/8+half],
			Lo:    v[ChunkSlots/8+half:],
		})
	}
	return out, nil
}

// Vector returns vector id exactly (float32), or nil if it is not stored
// or no file uses it any more (queued for GC).
func (s *Snapshot) Vector(id VecID) []float32 { return s.slot(id, false) }

// slot returns the values in id's slot when its live bit equals !queued.
func (s *Snapshot) slot(id VecID, queued bool) []float32 {
	if id == 0 {
		return nil
	}
	v := s.tx.Bucket(bChunks).Get(chunkKey(uint32((id - 1) / ChunkSlots)))
	slot := int((id - 1) % ChunkSlots)
	if len(v) != chunkSize(s.id.Dim) || (v[slot/8]&(1<<(slot%8)) != 0) == queued {
		return nil
	}
	d := s.id.Dim
	hi := v[ChunkSlots/8+slot*d*2:]
	lo := v[ChunkSlots/8+ChunkSlots*d*2+slot*d*2:]
	out := make([]float32, d)
	for i := range out {
		out[i] = Join(binary.LittleEndian.Uint16(hi[2*i:]), binary.LittleEndian.Uint16(lo[2*i:]))
	}
	return out
}

// VectorByHash returns the stored vector computed from content h, for a
// query by that content: one no file uses any more (queued, out of the
// searches) included, whose slot keeps the content's values until GC.
func (s *Snapshot) VectorByHash(h Hash) (VecID, []float32) {
	v := s.tx.Bucket(bHashes).Get(h[:])
	if v == nil {
		return 0, nil
	}
	id := VecID(getU64(v))
	if vec := s.Vector(id); vec != nil {
		return id, vec
	}
	return id, s.slot(id, true)
}

// Paths returns the files using vector id, sorted.
func (s *Snapshot) Paths(id VecID) []string {
	prefix := u64(uint64(id))
	var out []string
	c := s.tx.Bucket(bRefs).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, string(k[8:]))
	}
	return out
}

// File returns the record of path.
func (s *Snapshot) File(path string) (File, bool, error) {
	v := s.tx.Bucket(bFiles).Get([]byte(path))
	if v == nil {
		return File{}, false, nil
	}
	f, err := decodeFile(v)
	if err != nil {
		return f, false, fmt.Errorf("record of %s: %w", path, err)
	}
	f.CtimeNs = s.ctimeOf(path)
	return f, true, nil
}

// Files calls fn for every file record whose path is dir itself or lies
// under dir (every record when dir is ""), in path order.
func (s *Snapshot) Files(dir string, fn func(path string, f File) error) error {
	c := s.tx.Bucket(bFiles).Cursor()
	ct := s.ctimeReader()
	visit := func(k, v []byte) error {
		f, err := decodeFile(v)
		if err != nil {
			return fmt.Errorf("record of %s: %w", k, err)
		}
		f.CtimeNs = ct.at(k)
		return fn(string(k), f)
	}
	if dir == "" {
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if err := visit(k, v); err != nil {
				return err
			}
		}
		return nil
	}
	if k, v := c.Seek([]byte(dir)); k != nil && string(k) == dir {
		if err := visit(k, v); err != nil {
			return err
		}
	}
	prefix := []byte(strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator))
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := visit(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Under reports whether path is dir or inside it (both absolute, clean).
func Under(path, dir string) bool {
	if path == dir {
		return true
	}
	d := strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator)
	return strings.HasPrefix(path, d)
}

// Within reports whether path is one of the records a command given dir
// acts on: dir itself, a path inside it (Under), or a sample of the tar
// shard dir (dir#KEY).
func Within(path, dir string) bool {
	return Under(path, dir) || strings.HasPrefix(path, dir+SampleSep)
}

// FilesWithin calls fn for every file record Within dir: Files(dir), then
// the samples of a tar shard dir (FilesPrefix(dir#)).
func (s *Snapshot) FilesWithin(dir string, fn func(path string, f File) error) error {
	if err := s.Files(dir, fn); err != nil {
		return err
	}
	if dir == "" {
		return nil // Files visited every record
	}
	return s.FilesPrefix(dir+SampleSep, fn)
}

// Hashes calls fn with the content hash of every stored vector.
func (s *Snapshot) Hashes(fn func(h Hash) error) error {
	return s.tx.Bucket(bHashes).ForEach(func(k, _ []byte) error {
		var h Hash
		copy(h[:], k)
		return fn(h)
	})
}
