package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// The metacol bucket (optional) is the metadata a filter reads, laid out
// by vector beside the chunks: a filtered search over a million records
// reads about 33 MB of fixed-size columns instead of decoding a million
// photometa records. It is derived data, kept by every write of a Writer
// in the same transaction as the records it derives from:
//
//	"stamp"         u64 the transaction that last brought it up to date,
//	                u32 the column's format (colVersion)
//	"c" ‖ u32 BE    chunk number → ColumnChunk of its ChunkSlots vectors
//	"x" ‖ u64 BE    vector id → ColumnChunk of the distinct entries of its
//	                files, for a vector whose files differ (ColMixed)
//	"p" ‖ u32 BE    place id → city, region, country, code (length-prefixed)
//	"m" ‖ u32 BE    camera id → make, model, lens (length-prefixed)
//
// A reader trusts it only when the stamp is the transaction it reads and
// the format its own (Snapshot.MetaColumn): a write by a clipidx from
// before the column, which leaves the stamp behind, or a column of another
// format makes readers fall back on the records, and the next Writer
// transaction rebuilds the column whole. Being derived, it never makes an
// index unusable: a column that cannot be read is rebuilt, not an error.
var (
	bMetaCol  = []byte("metacol")
	kColStamp = []byte("stamp")
)

func init() { optionalBuckets = append(optionalBuckets, bMetaCol) }

// The flags of a vector in the column (ColumnChunk.Flags).
const (
	// ColMeta: every file of the vector has metadata, the same in every
	// field a filter reads (date, place, camera, position).
	ColMeta = 1 << iota
	// ColDate: a capture time (TakenSource not empty).
	ColDate
	// ColGPS: a position.
	ColGPS
	// ColPhoto: a file of the vector is a photo; ColVideo: a frame.
	ColPhoto
	ColVideo
	// ColMixed: its files differ (some without metadata, other values, or
	// photos and frames): MetaColumn.Variants has an entry per difference,
	// and a filter that must know which file matches reads the records.
	ColMixed
	// ColMotion: a Motion Photo (Meta.Motion); ColLive: a Live Photo's
	// still (Meta.Live).
	ColMotion
	ColLive
)

// A column of n slots is a version byte, then by field n flags, n capture
// times (8 bytes), n place ids (4), n camera ids (4), n latitudes (8) and
// n longitudes (8), little-endian.
const (
	colVersion  = 4 // 2: cameras with their lens; 3: ColMotion; 4: ColLive
	colSlotSize = 1 + 8 + 4 + 4 + 8 + 8
	colSize     = 1 + colSlotSize*ChunkSlots
)

// ColumnChunk is a column of slots: those of one chunk (slot i describes
// vector First+i) or the variants of one vector. It aliases the database
// map: valid inside the View.
type ColumnChunk struct {
	b []byte
	n int
}

func columnOf(b []byte) (ColumnChunk, bool) {
	if len(b) < 1 || b[0] != colVersion || (len(b)-1)%colSlotSize != 0 {
		return ColumnChunk{}, false
	}
	return ColumnChunk{b, (len(b) - 1) / colSlotSize}, true
}

// Len is the number of slots.
func (c ColumnChunk) Len() int { return c.n }

// Flags of slot i (Col* bits); 0 for a slot without files.
func (c ColumnChunk) Flags(i int) uint8 { return c.b[1+i] }

// Taken is slot i's capture time (Meta.Taken), valid with ColDate.
func (c ColumnChunk) Taken(i int) int64 {
	return int64(binary.LittleEndian.Uint64(c.b[1+c.n+8*i:]))
}

// Place is slot i's place id (1-based into MetaColumn.Places; 0 = none).
func (c ColumnChunk) Place(i int) uint32 {
	return binary.LittleEndian.Uint32(c.b[1+9*c.n+4*i:])
}

// Camera is slot i's camera id (1-based into MetaColumn.Cameras; 0 = none).
func (c ColumnChunk) Camera(i int) uint32 {
	return binary.LittleEndian.Uint32(c.b[1+13*c.n+4*i:])
}

// Position is slot i's GPS position, valid with ColGPS.
func (c ColumnChunk) Position(i int) (lat, lon float64) {
	return math.Float64frombits(binary.LittleEndian.Uint64(c.b[1+17*c.n+8*i:])),
		math.Float64frombits(binary.LittleEndian.Uint64(c.b[1+25*c.n+8*i:]))
}

// newColumn is an empty column of n slots.
func newColumn(n int) ColumnChunk {
	b := make([]byte, 1+colSlotSize*n)
	b[0] = colVersion
	return ColumnChunk{b, n}
}

// ColumnPlace is a place of the column's dictionary.
type ColumnPlace struct{ City, Region, Country, CountryCode string }

// ColumnCamera is a camera and lens of the column's dictionary.
type ColumnCamera struct{ Make, Model, Lens string }

// MetaColumn is the metadata column of a snapshot (see metacol).
type MetaColumn struct {
	bk      *bolt.Bucket
	Places  []ColumnPlace  // id-1 → place
	Cameras []ColumnCamera // id-1 → camera
}

// MetaColumn returns the snapshot's metadata column; nil when the index
// has none up to date (an index from before it, or last written by a
// clipidx that did not keep it): read the records then.
// A column that cannot be read is none too (Check reports it).
func (s *Snapshot) MetaColumn() (*MetaColumn, error) {
	c, err := columnAt(s.tx, uint64(s.tx.ID()))
	if err != nil {
		return nil, nil
	}
	return c, nil
}

// colStamp is the stamp of a column up to date at transaction id.
func colStamp(id uint64) []byte { return binary.BigEndian.AppendUint32(u64(id), colVersion) }

// stamped reports whether bk holds a column of this format up to date at
// transaction id.
func stamped(bk *bolt.Bucket, id uint64) bool {
	return bk != nil && bytes.Equal(bk.Get(kColStamp), colStamp(id))
}

// columnAt returns the column of tx when it is stamped at stamp; nil
// otherwise.
func columnAt(tx *bolt.Tx, stamp uint64) (*MetaColumn, error) {
	bk := tx.Bucket(bMetaCol)
	if !stamped(bk, stamp) {
		return nil, nil
	}
	d, err := readColDict(bk)
	if err != nil {
		return nil, err
	}
	return &MetaColumn{bk: bk, Places: d.places, Cameras: d.cams}, nil
}

// Chunk returns the column of the chunk whose first vector is first;
// false when it has none (read the records then).
func (c *MetaColumn) Chunk(first VecID) (ColumnChunk, bool) {
	v := c.bk.Get(colChunkKey(uint32((first - 1) / ChunkSlots)))
	if len(v) != colSize {
		return ColumnChunk{}, false
	}
	return columnOf(v)
}

// Variants returns the distinct entries of the files of vector id, whose
// flags say ColMixed: one slot per difference, each with the kind of its
// files (ColPhoto or ColVideo); false when it has none (read the records
// then).
func (c *MetaColumn) Variants(id VecID) (ColumnChunk, bool) {
	return columnOf(c.bk.Get(colVarKey(id)))
}

// VariantReader reads the variants of vectors asked for in ascending id
// order with one cursor (a few steps each), not a lookup each.
type VariantReader struct {
	c    *bolt.Cursor
	k, v []byte
	key  []byte
}

// VariantReader returns a reader of c's variants.
func (c *MetaColumn) VariantReader() *VariantReader {
	return &VariantReader{c: c.bk.Cursor()}
}

// Variants is MetaColumn.Variants.
func (r *VariantReader) Variants(id VecID) (ColumnChunk, bool) {
	r.key = binary.BigEndian.AppendUint64(append(r.key[:0], 'x'), uint64(id))
	if r.k == nil || bytes.Compare(r.key, r.k) < 0 {
		r.k, r.v = r.c.Seek(r.key) // the first call, or a step back
	}
	for steps := 0; r.k != nil && bytes.Compare(r.k, r.key) < 0; steps++ {
		if steps == 16 { // far on: look it up
			r.k, r.v = r.c.Seek(r.key)
			break
		}
		r.k, r.v = r.c.Next()
	}
	if r.k == nil || !bytes.Equal(r.k, r.key) {
		return ColumnChunk{}, false
	}
	return columnOf(r.v)
}

func colChunkKey(n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{'c'}, n) }
func colVarKey(id VecID) []byte   { return binary.BigEndian.AppendUint64([]byte{'x'}, uint64(id)) }

// colDict is the column's dictionary of places and cameras.
type colDict struct {
	places []ColumnPlace
	cams   []ColumnCamera
	pid    map[ColumnPlace]uint32
	cid    map[ColumnCamera]uint32
}

func readColDict(bk *bolt.Bucket) (*colDict, error) {
	d := &colDict{pid: map[ColumnPlace]uint32{}, cid: map[ColumnCamera]uint32{}}
	c := bk.Cursor()
	for k, v := c.Seek([]byte{'m'}); k != nil && k[0] == 'm'; k, v = c.Next() {
		f, ok := splitStrs(v, 3)
		if len(k) != 5 || binary.BigEndian.Uint32(k[1:]) != uint32(len(d.cams)+1) || !ok {
			return nil, fmt.Errorf("%w: metadata column camera %x", ErrCorrupt, k)
		}
		d.cams = append(d.cams, ColumnCamera{f[0], f[1], f[2]})
		d.cid[d.cams[len(d.cams)-1]] = uint32(len(d.cams))
	}
	for k, v := c.Seek([]byte{'p'}); k != nil && k[0] == 'p'; k, v = c.Next() {
		f, ok := splitStrs(v, 4)
		if len(k) != 5 || binary.BigEndian.Uint32(k[1:]) != uint32(len(d.places)+1) || !ok {
			return nil, fmt.Errorf("%w: metadata column place %x", ErrCorrupt, k)
		}
		d.places = append(d.places, ColumnPlace{f[0], f[1], f[2], f[3]})
		d.pid[d.places[len(d.places)-1]] = uint32(len(d.places))
	}
	return d, nil
}

func splitStrs(v []byte, n int) ([]string, bool) {
	d := metaDecoder{b: v}
	out := make([]string, n)
	for i := range out {
		out[i] = string(d.bytes())
	}
	return out, !d.bad && len(d.b) == 0
}

// place returns the id of p (0 for no place), adding it when new.
func (d *colDict) place(bk *bolt.Bucket, p ColumnPlace) (uint32, error) {
	if p == (ColumnPlace{}) {
		return 0, nil
	}
	if id, ok := d.pid[p]; ok {
		return id, nil
	}
	d.places = append(d.places, p)
	id := uint32(len(d.places))
	d.pid[p] = id
	v := appendStr(appendStr(appendStr(appendStr(nil, p.City), p.Region), p.Country), p.CountryCode)
	return id, bk.Put(binary.BigEndian.AppendUint32([]byte{'p'}, id), v)
}

// camera returns the id of c (0 for no camera), adding it when new.
func (d *colDict) camera(bk *bolt.Bucket, c ColumnCamera) (uint32, error) {
	if c == (ColumnCamera{}) {
		return 0, nil
	}
	if id, ok := d.cid[c]; ok {
		return id, nil
	}
	d.cams = append(d.cams, c)
	id := uint32(len(d.cams))
	d.cid[c] = id
	return id, bk.Put(binary.BigEndian.AppendUint32([]byte{'m'}, id), appendStr(appendStr(appendStr(nil, c.Make), c.Model), c.Lens))
}

// colSlot is what the column says of one vector, with its names.
type colSlot struct {
	flags    uint8
	taken    int64
	place    ColumnPlace
	camera   ColumnCamera
	lat, lon float64
}

// slotOf folds the files of one vector (their paths, metadata and its
// state) into its column entry, and when they differ (ColMixed) into its
// variants: each distinct entry of a file, with that file's kind, in path
// order. A record that does not decode makes the vector ColMixed without
// variants: a filter reads its records, and meets the damage there.
func slotOf(paths []string, metas []Meta, has []metaState) (colSlot, []colSlot) {
	var s colSlot
	var each []colSlot
	damaged := false
	for i, p := range paths {
		kind := uint8(ColPhoto)
		if strings.Contains(p, FrameSep) {
			kind = ColVideo
		}
		s.flags |= kind
		var one colSlot
		damaged = damaged || has[i] == metaBad
		if has[i] == metaOK {
			m := &metas[i]
			one.flags = ColMeta
			if m.TakenSource != "" {
				one.flags |= ColDate
				one.taken = m.Taken
			}
			if m.HasGPS {
				one.flags |= ColGPS
				one.lat, one.lon = m.Lat, m.Lon
			}
			if m.Motion {
				one.flags |= ColMotion
			}
			if m.Live {
				one.flags |= ColLive
			}
			one.place = ColumnPlace{m.City, m.Region, m.Country, m.CountryCode}
			one.camera = ColumnCamera{m.Make, m.Model, m.Lens}
		}
		if v := (colSlot{one.flags | kind, one.taken, one.place, one.camera, one.lat, one.lon}); !slices.ContainsFunc(each, v.same) {
			each = append(each, v)
		}
		if i == 0 {
			s.flags |= one.flags
			s.taken, s.place, s.camera, s.lat, s.lon = one.taken, one.place, one.camera, one.lat, one.lon
			continue
		}
		one.flags |= s.flags & (ColPhoto | ColVideo)
		if !one.same(s) {
			s.flags |= ColMixed
		}
	}
	if s.flags&(ColPhoto|ColVideo) == ColPhoto|ColVideo {
		s.flags |= ColMixed
	}
	if damaged {
		s.flags |= ColMixed
	}
	if s.flags&ColMixed == 0 || damaged {
		each = nil
	}
	return s, each
}

// same reports whether a and b are one entry (positions compared by bits).
func (a colSlot) same(b colSlot) bool {
	return a.flags == b.flags && a.taken == b.taken && a.place == b.place && a.camera == b.camera &&
		math.Float64bits(a.lat) == math.Float64bits(b.lat) && math.Float64bits(a.lon) == math.Float64bits(b.lon)
}

// putVariants writes the variants of vector id (none: removes them).
func putVariants(bk *bolt.Bucket, d *colDict, id VecID, each []colSlot) error {
	if len(each) == 0 {
		if bk.Get(colVarKey(id)) != nil {
			return bk.Delete(colVarKey(id))
		}
		return nil
	}
	c := newColumn(len(each))
	for i, v := range each {
		if err := v.put(bk, d, c, i); err != nil {
			return err
		}
	}
	return bk.Put(colVarKey(id), c.b)
}

// put writes s into slot i of column c, with ids from d.
func (s colSlot) put(bk *bolt.Bucket, d *colDict, c ColumnChunk, i int) error {
	pid, err := d.place(bk, s.place)
	if err != nil {
		return err
	}
	cid, err := d.camera(bk, s.camera)
	if err != nil {
		return err
	}
	n, b := c.n, c.b
	b[1+i] = s.flags
	binary.LittleEndian.PutUint64(b[1+n+8*i:], uint64(s.taken))
	binary.LittleEndian.PutUint32(b[1+9*n+4*i:], pid)
	binary.LittleEndian.PutUint32(b[1+13*n+4*i:], cid)
	binary.LittleEndian.PutUint64(b[1+17*n+8*i:], math.Float64bits(s.lat))
	binary.LittleEndian.PutUint64(b[1+25*n+8*i:], math.Float64bits(s.lon))
	return nil
}

// vecFiles reads the paths and metadata of every file of vector id.
func vecFiles(tx *bolt.Tx, id VecID, in *interner) ([]string, []Meta, []metaState) {
	prefix := u64(uint64(id))
	pm := tx.Bucket(bPhotoMeta)
	var paths []string
	var metas []Meta
	var has []metaState
	c := tx.Bucket(bRefs).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		m, st := readRecordMeta(pm, k[8:], in)
		paths, metas, has = append(paths, string(k[8:])), append(metas, m), append(has, st)
	}
	return paths, metas, has
}

// metaState is whether a file has a metadata record that decodes.
type metaState uint8

const (
	metaNone metaState = iota // no record
	metaOK
	metaBad // a record that does not decode (Check reports it)
)

// readRecordMeta reads the metadata record of path from pm (nil: none).
func readRecordMeta(pm *bolt.Bucket, path []byte, in *interner) (Meta, metaState) {
	if pm == nil {
		return Meta{}, metaNone
	}
	v := pm.Get(path)
	if v == nil {
		return Meta{}, metaNone
	}
	m, err := decodeMeta(v, in)
	if err != nil {
		return Meta{}, metaBad
	}
	return m, metaOK
}

// colDirty collects, per write transaction of a Writer, the vectors whose
// files or metadata changed (see Writer.update and syncColumn).
var colDirty sync.Map // *bolt.Tx → map[VecID]struct{}

// dirtyVec notes that the files or metadata of vector id changed in w's
// transaction.
func (w *wtx) dirtyVec(id VecID) {
	if id != 0 && w.dirty != nil {
		w.dirty[id] = struct{}{}
	}
}

// dirtyPath notes that the metadata of path changed.
func (w *wtx) dirtyPath(path string) {
	if w.dirty == nil {
		return
	}
	if f, ok, err := w.getFile(path); err == nil && ok {
		w.dirtyVec(f.Vec)
	}
}

// syncColumn brings the column up to date at the end of write transaction
// tx: the vectors in dirty when the column was current before tx, or all
// of them otherwise.
func syncColumn(tx *bolt.Tx, dirty map[VecID]struct{}) error {
	if tx.Bucket(bChunks) == nil || tx.Bucket(bRefs) == nil {
		return nil // not an index yet
	}
	bk := tx.Bucket(bMetaCol)
	rebuild := !stamped(bk, uint64(tx.ID()-1))
	if !rebuild && len(dirty) > 0 {
		// A column that cannot be read (damaged) is made again.
		rebuild = updateColumn(tx, bk, dirty) != nil
	}
	if rebuild {
		if err := rebuildColumn(tx); err != nil {
			return err
		}
		bk = tx.Bucket(bMetaCol)
	}
	return bk.Put(kColStamp, colStamp(uint64(tx.ID())))
}

// rebuildColumn writes the whole column from the refs and photometa
// buckets: one pass over the refs in vector order.
func rebuildColumn(tx *bolt.Tx) error {
	if tx.Bucket(bMetaCol) != nil {
		if err := tx.DeleteBucket(bMetaCol); err != nil {
			return err
		}
	}
	bk, err := tx.CreateBucket(bMetaCol)
	if err != nil {
		return err
	}
	d := &colDict{pid: map[ColumnPlace]uint32{}, cid: map[ColumnCamera]uint32{}}
	in := newInterner()
	pm := tx.Bucket(bPhotoMeta)
	bufs := map[uint32]ColumnChunk{}
	chunkBuf := func(n uint32) ColumnChunk {
		b, ok := bufs[n]
		if !ok {
			b = newColumn(ChunkSlots)
			bufs[n] = b
		}
		return b
	}
	// Every stored chunk gets a column, so that a missing one means damage.
	cc := tx.Bucket(bChunks).Cursor()
	for k, _ := cc.First(); k != nil; k, _ = cc.Next() {
		if len(k) == 4 {
			chunkBuf(binary.BigEndian.Uint32(k))
		}
	}
	var (
		cur   VecID
		paths []string
		metas []Meta
		has   []metaState
	)
	flush := func() error {
		if cur == 0 {
			return nil
		}
		n := uint32((cur - 1) / ChunkSlots)
		s, each := slotOf(paths, metas, has)
		err := s.put(bk, d, chunkBuf(n), int((cur-1)%ChunkSlots))
		if err == nil && len(each) > 0 {
			err = putVariants(bk, d, cur, each)
		}
		paths, metas, has = paths[:0], metas[:0], has[:0]
		return err
	}
	c := tx.Bucket(bRefs).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) < 8 {
			return fmt.Errorf("%w: ref key %x", ErrCorrupt, k)
		}
		id := VecID(binary.BigEndian.Uint64(k))
		if id != cur {
			if err := flush(); err != nil {
				return err
			}
			cur = id
		}
		m, st := readRecordMeta(pm, k[8:], in)
		paths, metas, has = append(paths, string(k[8:])), append(metas, m), append(has, st)
	}
	if err := flush(); err != nil {
		return err
	}
	for n, b := range bufs {
		if err := bk.Put(colChunkKey(n), b.b); err != nil {
			return err
		}
	}
	return nil
}

// updateColumn rewrites the column entries of the dirty vectors.
func updateColumn(tx *bolt.Tx, bk *bolt.Bucket, dirty map[VecID]struct{}) error {
	d, err := readColDict(bk)
	if err != nil {
		return err
	}
	in := newInterner()
	bufs := map[uint32]ColumnChunk{}
	for id := range dirty {
		n := uint32((id - 1) / ChunkSlots)
		buf, ok := bufs[n]
		if !ok {
			buf = newColumn(ChunkSlots)
			if old := bk.Get(colChunkKey(n)); len(old) == colSize {
				copy(buf.b, old)
			}
			bufs[n] = buf
		}
		s, each := slotOf(vecFiles(tx, id, in))
		if err := s.put(bk, d, buf, int((id-1)%ChunkSlots)); err != nil {
			return err
		}
		if err := putVariants(bk, d, id, each); err != nil {
			return err
		}
	}
	for n, b := range bufs {
		if err := bk.Put(colChunkKey(n), b.b); err != nil {
			return err
		}
	}
	return nil
}

// slot reads slot i of c with its names.
func (col *MetaColumn) slot(c ColumnChunk, i int) colSlot {
	s := colSlot{flags: c.Flags(i), taken: c.Taken(i)}
	s.lat, s.lon = c.Position(i)
	if p := c.Place(i); p > 0 && int(p) <= len(col.Places) {
		s.place = col.Places[p-1]
	}
	if m := c.Camera(i); m > 0 && int(m) <= len(col.Cameras) {
		s.camera = col.Cameras[m-1]
	}
	return s
}

// checkColumn reports column entries that differ from the records they
// derive from, when the column is current (see Check).
func (s *Snapshot) checkColumn(bad func(format string, a ...any)) {
	checkColumnAt(s.tx, uint64(s.tx.ID()), bad)
}

// repairColumn makes the next syncColumn of write transaction tx rebuild
// the column when it is damaged: it derives from the records, so a damaged
// column is mended, not a reason to start the index over.
func repairColumn(tx *bolt.Tx) error {
	damaged := false
	checkColumnAt(tx, uint64(tx.ID()-1), func(string, ...any) { damaged = true })
	if bk := tx.Bucket(bMetaCol); damaged && bk != nil {
		return bk.Delete(kColStamp)
	}
	return nil
}

// checkColumnAt is checkColumn on the column stamped stamp in tx.
func checkColumnAt(tx *bolt.Tx, stamp uint64, report func(format string, a ...any)) {
	// The column derives from the records: a writer opened with Reindex
	// (clipidx build --reindex) rebuilds it and keeps everything else.
	bad := func(format string, a ...any) {
		report("metadata column (rebuilt by a build with --reindex): "+format, a...)
	}
	s := &Snapshot{tx: tx}
	col, err := columnAt(tx, stamp)
	if err != nil {
		bad("%v", err)
		return
	}
	if col == nil {
		return
	}
	in := newInterner()
	cc := s.tx.Bucket(bChunks).Cursor()
	for k, _ := cc.First(); k != nil; k, _ = cc.Next() {
		if len(k) != 4 {
			continue
		}
		first := VecID(uint64(binary.BigEndian.Uint32(k))*ChunkSlots + 1)
		ch, ok := col.Chunk(first)
		if !ok {
			bad("chunk %x has no column", k)
			continue
		}
		for i := range ChunkSlots {
			id := first + VecID(i)
			want, wantEach := slotOf(vecFiles(s.tx, id, in))
			if got := col.slot(ch, i); !got.same(want) || got.place != want.place || got.camera != want.camera {
				bad("vector %d says %+v, its files %+v", id, got, want)
			}
			var gotEach []colSlot
			if v := col.bk.Get(colVarKey(id)); v != nil {
				vc, ok := columnOf(v)
				if !ok {
					bad("vector %d: variants of %d bytes", id, len(v))
					continue
				}
				for j := range vc.Len() {
					gotEach = append(gotEach, col.slot(vc, j))
				}
			}
			if !slices.Equal(gotEach, wantEach) {
				bad("vector %d has variants %+v, its files %+v", id, gotEach, wantEach)
			}
		}
	}
}
