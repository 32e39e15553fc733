package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The photometa bucket (optional, see sample.go) holds the Meta of each
// record that has one, path → encoded Meta; the meta bucket's "places" key
// names the place table its place names came from (see PlacesVersion), its
// "videometa" key (u64) the version of the way video frames' metadata was
// read (see VideoMetaVersion). Until that version is recorded, the
// videoread bucket (optional) marks each video read by a newer version,
// video path → u64 version (see MarkVideoRead).
var (
	bPhotoMeta = []byte("photometa")
	bMetaRead  = []byte("metaread")
	bVideoRead = []byte("videoread")
	kPlaces    = []byte("places")
	kVideoMeta = []byte("videometa")
)

func init() { optionalBuckets = append(optionalBuckets, bPhotoMeta, bMetaRead, bVideoRead) }

const (
	metaVersion = 1

	metaOffset = 1 << iota // flag bits
	metaGPS
	metaAlt
	metaMotionRead
	metaMotion
	metaLive
)

// takenSources are the TakenSource values encoded as one byte (index); any
// other value is stored as its text after the byte 0xff.
var takenSources = []string{"", TakenEXIF, TakenVideo, TakenMtime}

// encodeMeta lays out m compactly (EachMeta decodes a million of them for
// one filtered search): version, flags, source, varint times, the GPS
// position as float64 bits only when present, then length-prefixed texts.
func encodeMeta(m Meta) []byte {
	b := make([]byte, 0, 48+len(m.Make)+len(m.Model)+len(m.Lens)+len(m.City)+len(m.Region)+len(m.Country)+len(m.CountryCode))
	var flags byte
	if m.HasOffset {
		flags |= metaOffset
	}
	if m.HasGPS {
		flags |= metaGPS
	}
	if m.HasAlt {
		flags |= metaAlt
	}
	if m.MotionRead {
		flags |= metaMotionRead
	}
	if m.Motion {
		flags |= metaMotion
	}
	if m.Live {
		flags |= metaLive
	}
	b = append(b, metaVersion, flags)
	src := byte(0xff)
	for i, s := range takenSources {
		if s == m.TakenSource {
			src = byte(i)
		}
	}
	b = append(b, src)
	if src == 0xff {
		b = appendStr(b, m.TakenSource)
	}
	b = binary.AppendVarint(b, m.Taken)
	b = binary.AppendUvarint(b, uint64(uint32(m.TakenNs)))
	if m.HasOffset {
		b = binary.AppendVarint(b, int64(m.Offset))
	}
	if m.HasGPS {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Lat))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Lon))
	}
	if m.HasAlt {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Alt))
	}
	b = binary.AppendUvarint(b, uint64(max(m.Width, 0)))
	b = binary.AppendUvarint(b, uint64(max(m.Height, 0)))
	for _, s := range []string{m.Make, m.Model, m.Lens, m.City, m.Region, m.Country, m.CountryCode} {
		b = appendStr(b, s)
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// interner shares the strings of decoded records: a collection has a few
// cameras and places, so EachMeta allocates almost nothing per record.
// Records in path order repeat their neighbour's values (a folder is one
// trip with one camera), so each field first compares with the value it
// had in the previous record, without hashing.
type interner struct {
	m    map[string]string
	last [8]string // by field: 0 source, 1 make, 2 model, 3 lens, 4 city, 5 region, 6 country, 7 code
}

func newInterner() *interner { return &interner{m: map[string]string{}} }

func (in *interner) get(field int, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if string(b) == in.last[field] { // no allocation for the comparison
		return in.last[field]
	}
	s, ok := in.m[string(b)] // nor for the lookup
	if !ok {
		s = string(b)
		if len(in.m) < 1<<16 { // a pathological index: stop growing the table
			in.m[s] = s
		}
	}
	in.last[field] = s
	return s
}

// metaDecoder reads one encoded Meta.
type metaDecoder struct {
	b   []byte
	bad bool
}

func (d *metaDecoder) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *metaDecoder) v() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *metaDecoder) f64() float64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *metaDecoder) bytes() []byte {
	n := d.uv()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func decodeMeta(v []byte, in *interner) (Meta, error) {
	var m Meta
	if len(v) < 3 || v[0] != metaVersion {
		return m, ErrCorrupt
	}
	flags, src := v[1], v[2]
	d := metaDecoder{b: v[3:]}
	switch {
	case src == 0xff:
		m.TakenSource = in.get(0, d.bytes())
	case int(src) < len(takenSources):
		m.TakenSource = takenSources[src]
	default:
		return m, ErrCorrupt
	}
	m.Taken = d.v()
	ns := d.uv()
	if ns >= 1e9 {
		return m, ErrCorrupt
	}
	m.TakenNs = int32(ns)
	if flags&metaOffset != 0 {
		o := d.v()
		if o < math.MinInt16 || o > math.MaxInt16 {
			return m, ErrCorrupt
		}
		m.Offset, m.HasOffset = int16(o), true
	}
	if flags&metaGPS != 0 {
		m.HasGPS, m.Lat, m.Lon = true, d.f64(), d.f64()
	}
	if flags&metaAlt != 0 {
		m.HasAlt, m.Alt = true, d.f64()
	}
	m.MotionRead, m.Motion, m.Live = flags&metaMotionRead != 0, flags&metaMotion != 0, flags&metaLive != 0
	w, h := d.uv(), d.uv()
	if w > math.MaxInt32 || h > math.MaxInt32 {
		return m, ErrCorrupt
	}
	m.Width, m.Height = int(w), int(h)
	// Field by field (a loop over pointers would move m to the heap).
	m.Make = in.get(1, d.bytes())
	m.Model = in.get(2, d.bytes())
	m.Lens = in.get(3, d.bytes())
	m.City = in.get(4, d.bytes())
	m.Region = in.get(5, d.bytes())
	m.Country = in.get(6, d.bytes())
	m.CountryCode = in.get(7, d.bytes())
	if d.bad || len(d.b) != 0 {
		return m, ErrCorrupt
	}
	return m, nil
}

// PutMeta records the metadata of path (recorded by a Put of the same
// batch or an earlier one; Commit fails otherwise). A record's metadata
// goes with it: Delete, and a Put that records a failure, drop it.
func (b *Batch) PutMeta(path string, m Meta) {
	b.ops = append(b.ops, op{kind: opMeta, path: path, meta: &m})
}

// SetPlacesVersion records which place table the place names of the
// records come from (see Snapshot.PlacesVersion).
func (b *Batch) SetPlacesVersion(v string) {
	b.ops = append(b.ops, op{kind: opPlaces, path: v})
}

// SetVideoMetaVersion records the version of the code that read the
// metadata of every video frame the index holds (see
// Snapshot.VideoMetaVersion) and forgets the marks of single videos
// (MarkVideoRead), which it covers; 0 forgets it, as in an index written
// before it existed.
func (b *Batch) SetVideoMetaVersion(v uint64) {
	b.ops = append(b.ops, op{kind: opVideoMeta, file: File{Size: int64(v)}}) // carried in Size, as PutShard's stat
}

// MarkVideoRead records that the metadata of the frames of video was read
// by version v of the code (see Snapshot.VideoRead), while the index's
// version (VideoMetaVersion) is older: an upgrade reads each video once,
// whichever builds walk it, until every video is marked and the version
// can be recorded. The mark is of the path, not of a record: a video
// renamed is read again.
func (b *Batch) MarkVideoRead(video string, v uint64) {
	b.ops = append(b.ops, op{kind: opVideoRead, path: video, file: File{Size: int64(v)}})
}

// MarkMetaRead records that the metadata of the record at path was read
// by version v of the code that reads a file's metadata (see
// Snapshot.MetaRead), so that a newer version reads again only what it
// may read differently. The mark goes with the record's metadata (a
// record deleted, failed or merged over loses it).
func (b *Batch) MarkMetaRead(path string, v uint64) {
	b.ops = append(b.ops, op{kind: opMetaRead, path: path, file: File{Size: int64(v)}})
}

// applyMeta applies opMeta, opMetaRead, opPlaces, opVideoMeta and
// opVideoRead.
func (w *wtx) applyMeta(o op) error {
	switch {
	case o.kind == opPlaces:
		return w.meta.Put(kPlaces, []byte(o.path))
	case o.kind == opVideoMeta && o.file.Size == 0:
		return w.meta.Delete(kVideoMeta)
	case o.kind == opVideoMeta:
		if w.tx.Bucket(bVideoRead) != nil {
			if err := w.tx.DeleteBucket(bVideoRead); err != nil {
				return err
			}
		}
		return w.meta.Put(kVideoMeta, u64(uint64(o.file.Size)))
	case o.kind == opVideoRead:
		bk, err := w.tx.CreateBucketIfNotExists(bVideoRead)
		if err != nil {
			return err
		}
		return bk.Put([]byte(o.path), u64(uint64(o.file.Size)))
	case o.kind == opMetaRead:
		if w.files.Get([]byte(o.path)) == nil {
			return fmt.Errorf("metadata read mark of %s: no file record", o.path)
		}
		bk, err := w.tx.CreateBucketIfNotExists(bMetaRead)
		if err != nil {
			return err
		}
		return bk.Put([]byte(o.path), u64(uint64(o.file.Size)))
	}
	if w.files.Get([]byte(o.path)) == nil {
		return fmt.Errorf("metadata of %s: no file record", o.path)
	}
	bk, err := w.tx.CreateBucketIfNotExists(bPhotoMeta)
	if err != nil {
		return err
	}
	w.dirtyPath(o.path)
	m := *o.meta
	m.Live = (&Snapshot{tx: w.tx}).namedLive(o.path) // the store's to keep, whatever the caller said
	return bk.Put([]byte(o.path), encodeMeta(m))
}

// namedLive reports whether a Live Photo movie record names still. A
// record that does not decode says no: Check reports it, and a damaged
// neighbour must not fail the write of a still's metadata.
func (s *Snapshot) namedLive(still string) bool {
	if _, _, frame := SplitFrame(still); frame {
		return false // a video's frame is no still (and spares the seeks)
	}
	movie, err := s.LiveMovie(still)
	return err == nil && movie != ""
}

// refreshLive sets the Live flag of the metadata of still (if it has
// any) to whether a Live Photo movie record names it.
func (w *wtx) refreshLive(still string) error {
	bk := w.tx.Bucket(bPhotoMeta)
	if bk == nil {
		return nil
	}
	v := bk.Get([]byte(still))
	if v == nil {
		return nil
	}
	m, err := decodeMeta(v, newInterner())
	if err != nil {
		return nil // damaged: Check reports it, a build writes it again
	}
	if live := (&Snapshot{tx: w.tx}).namedLive(still); live != m.Live {
		m.Live = live
		w.dirtyPath(still)
		return bk.Put([]byte(still), encodeMeta(m))
	}
	return nil
}

// kLiveStamp (meta bucket, u64) is the write transaction that last kept
// the Live flags of the stills' metadata (syncLiveMeta).
var kLiveStamp = []byte("livestamp")

// syncLiveMeta keeps Meta.Live set exactly on the stills that a Live
// Photo movie record names (File.LiveVideo). Every write of this package
// keeps it as it goes (wtx.apply, applyMeta); an index written last by a
// clipidx from before the flag, which leaves the stamp behind, has every
// flag set again by the next write: a pass over the records without a
// vector and over the metadata.
func syncLiveMeta(tx *bolt.Tx) error {
	m := tx.Bucket(bMeta)
	if m == nil || tx.Bucket(bFiles) == nil {
		return nil // not an index yet
	}
	if v := m.Get(kLiveStamp); len(v) != 8 || getU64(v) != uint64(tx.ID()-1) {
		if err := dropStaleMeta(tx); err != nil {
			return err
		}
		if err := relinkLive(tx); err != nil {
			return err
		}
	}
	return m.Put(kLiveStamp, u64(uint64(tx.ID())))
}

// dropStaleMeta drops the metadata left by a writer that keeps none (a
// clipidx from before metadata, which removes a file's record alone, or
// records a failure over it): that of a path with no file record, or with
// a failure's. Check would call the index damaged for it, and nothing else
// would ever remove it.
func dropStaleMeta(tx *bolt.Tx) error {
	bk := tx.Bucket(bPhotoMeta)
	if bk == nil {
		return nil
	}
	files := tx.Bucket(bFiles)
	var stale []string
	if err := bk.ForEach(func(k, _ []byte) error {
		if fv := files.Get(k); fv == nil {
			stale = append(stale, string(k))
		} else if f, err := decodeFile(fv); err == nil && f.Failed() {
			stale = append(stale, string(k))
		}
		return nil
	}); err != nil {
		return err
	}
	w := newWtx(tx, 0)
	for _, p := range stale {
		if err := w.deleteMeta(p); err != nil {
			return err
		}
	}
	return nil
}

// relinkLive sets the Live flag of every still's metadata from the movie
// records.
func relinkLive(tx *bolt.Tx) error {
	w := newWtx(tx, 0)
	stills := map[string]bool{}
	c := tx.Bucket(bFiles).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) < recFixed || binary.BigEndian.Uint64(v[recFixed-8:recFixed]) != 0 {
			continue // a record with a vector
		}
		if f, err := decodeFile(v); err == nil {
			for _, s := range appendLiveStill(nil, string(k), f) {
				stills[s] = true
			}
		}
	}
	if bk := tx.Bucket(bPhotoMeta); bk != nil {
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) > 1 && v[1]&metaLive != 0 {
				stills[string(k)] = true
			}
		}
	}
	for s := range stills {
		if err := w.refreshLive(s); err != nil {
			return err
		}
	}
	return nil
}

// deleteMeta drops the metadata of path, if any, and its read mark.
func (w *wtx) deleteMeta(path string) error {
	w.dirtyPath(path)
	if err := deleteIn(w.tx, bMetaRead, path); err != nil {
		return err
	}
	return deleteIn(w.tx, bPhotoMeta, path)
}

func deleteIn(tx *bolt.Tx, bucket []byte, path string) error {
	if bk := tx.Bucket(bucket); bk != nil {
		return bk.Delete([]byte(path))
	}
	return nil
}

// Meta returns the metadata recorded for path; false when there is none
// (a failed file, or an index no build since the metadata was added has
// completed).
func (s *Snapshot) Meta(path string) (Meta, bool, error) {
	bk := s.tx.Bucket(bPhotoMeta)
	if bk == nil {
		return Meta{}, false, nil
	}
	v := bk.Get([]byte(path))
	if v == nil {
		return Meta{}, false, nil
	}
	m, err := decodeMeta(v, newInterner())
	if err != nil {
		return m, false, fmt.Errorf("metadata record of %s: %w", path, err)
	}
	return m, true, nil
}

// EachMeta calls fn for every record with metadata, in path order. The
// strings of m may be shared between calls (never modified).
func (s *Snapshot) EachMeta(fn func(path string, m Meta) error) error {
	bk := s.tx.Bucket(bPhotoMeta)
	if bk == nil {
		return nil
	}
	in := newInterner()
	c := bk.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		m, err := decodeMeta(v, in)
		if err != nil {
			return fmt.Errorf("metadata record of %s: %w", k, err)
		}
		if err := fn(string(k), m); err != nil {
			return err
		}
	}
	return nil
}

// MetaSummary is what the records' metadata say as a whole (MetaCounts).
type MetaSummary struct {
	Records  int  // records with metadata
	FromFile int  // dated from the file (EXIF, or a video's container)
	Mtime    int  // dated by the file's modification time
	GPS      int  // with a GPS position
	Motion   int  // Motion Photos (Meta.Motion)
	First    Meta // the earliest dated record's metadata (zero when none)
	Last     Meta // the latest
}

// MetaCounts summarises the metadata of every record, reading of each
// only its flags, date source and date (a million records in a fraction
// of what EachMeta takes, with nothing allocated per record); the first
// and last dated records are decoded whole. Ties go to the first in path
// order.
func (s *Snapshot) MetaCounts() (MetaSummary, error) {
	var sum MetaSummary
	bk := s.tx.Bucket(bPhotoMeta)
	if bk == nil {
		return sum, nil
	}
	var first, last []byte
	var firstT, lastT int64
	c := bk.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) < 3 || v[0] != metaVersion {
			return sum, fmt.Errorf("metadata record of %s: %w", k, ErrCorrupt)
		}
		sum.Records++
		if v[1]&metaGPS != 0 {
			sum.GPS++
		}
		if v[1]&metaMotion != 0 {
			sum.Motion++
		}
		d := metaDecoder{b: v[3:]}
		dated := true
		switch src := v[2]; {
		case src == 0xff:
			dated = len(d.bytes()) > 0 // a source this build does not know: from the file
			if dated {
				sum.FromFile++
			}
		case int(src) >= len(takenSources):
			return sum, fmt.Errorf("metadata record of %s: %w", k, ErrCorrupt)
		case takenSources[src] == "":
			dated = false
		case takenSources[src] == TakenMtime:
			sum.Mtime++
		default:
			sum.FromFile++
		}
		if !dated {
			continue
		}
		t := d.v()
		if d.bad {
			return sum, fmt.Errorf("metadata record of %s: %w", k, ErrCorrupt)
		}
		if first == nil || t < firstT {
			first, firstT = v, t
		}
		if last == nil || t > lastT {
			last, lastT = v, t
		}
	}
	in := newInterner()
	for _, e := range []struct {
		v   []byte
		dst *Meta
	}{{first, &sum.First}, {last, &sum.Last}} {
		if e.v == nil {
			continue
		}
		m, err := decodeMeta(e.v, in)
		if err != nil {
			return sum, err
		}
		*e.dst = m
	}
	return sum, nil
}

// HasMeta calls fn with the path of every record with metadata, in path
// order, without decoding it.
func (s *Snapshot) HasMeta(fn func(path string) error) error {
	bk := s.tx.Bucket(bPhotoMeta)
	if bk == nil {
		return nil
	}
	c := bk.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if err := fn(string(k)); err != nil {
			return err
		}
	}
	return nil
}

// PlacesVersion names the place table the recorded place names come from,
// "" when none was recorded (an index from before the metadata, or merged):
// a build with another table resolves the places again.
func (s *Snapshot) PlacesVersion() string {
	return string(s.tx.Bucket(bMeta).Get(kPlaces))
}

// VideoMetaVersion is the version of the code that read the metadata of
// every video frame the index holds (the index package's), 0 when none was
// recorded (an index from before it, or merged): a build with a newer one
// reads the metadata of its videos again.
func (s *Snapshot) VideoMetaVersion() (uint64, error) {
	v := s.tx.Bucket(bMeta).Get(kVideoMeta)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: video metadata version is %d bytes, want 8", ErrCorrupt, len(v))
	}
	return getU64(v), nil
}

// MetaRead is the version of the code that read the metadata of the
// record at path, as marked by MarkMetaRead; 0 when not marked.
func (s *Snapshot) MetaRead(path string) uint64 {
	return markIn(s.tx, bMetaRead, path)
}

func markIn(tx *bolt.Tx, bucket []byte, key string) uint64 {
	if bk := tx.Bucket(bucket); bk != nil {
		if v := bk.Get([]byte(key)); len(v) == 8 {
			return getU64(v)
		}
	}
	return 0
}

// VideoRead is the version of the code that read the metadata of video's
// frames, as marked by MarkVideoRead; 0 when not marked (read by the
// index's VideoMetaVersion, or earlier).
func (s *Snapshot) VideoRead(video string) uint64 {
	return markIn(s.tx, bVideoRead, video)
}

// checkMeta reports metadata records that do not decode or have no file
// record, or belong to a failed file, and a damaged video metadata
// version or mark (see Check).
func (s *Snapshot) checkMeta(bad func(format string, a ...any)) {
	if _, err := s.VideoMetaVersion(); err != nil {
		bad("%v", err)
	}
	if bk := s.tx.Bucket(bVideoRead); bk != nil {
		bk.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				bad("%v: video read mark of %s is %d bytes, want 8", ErrCorrupt, k, len(v))
			}
			return nil
		})
	}
	// A mark without a record is no fault: a clipidx from before the marks
	// deletes records and leaves their marks.
	if bk := s.tx.Bucket(bMetaRead); bk != nil {
		bk.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				bad("%v: metadata read mark of %s is %d bytes, want 8", ErrCorrupt, k, len(v))
			}
			return nil
		})
	}
	bk := s.tx.Bucket(bPhotoMeta)
	if bk == nil {
		return
	}
	files := s.tx.Bucket(bFiles)
	in := newInterner()
	// The Live flags are kept by this package's writes only (syncLiveMeta):
	// after another's, the next write sets them again.
	liveKept := false
	if v := s.tx.Bucket(bMeta).Get(kLiveStamp); len(v) == 8 && getU64(v) == uint64(s.tx.ID()) {
		liveKept = true
	}
	bk.ForEach(func(k, v []byte) error {
		_, err := decodeMeta(v, in)
		fv := files.Get(k)
		switch {
		case err != nil:
			bad("metadata %s: %v", k, err)
		case fv == nil:
			bad("metadata %s: no file record", k)
		default:
			if f, err := decodeFile(fv); err == nil && f.Failed() {
				bad("metadata %s: the file is recorded as failed", k)
			}
			if live := len(v) > 1 && v[1]&metaLive != 0; liveKept && live != s.namedLive(string(k)) {
				bad("metadata %s: Live Photo flag %v, but a movie record names it: %v", k, live, !live)
			}
		}
		return nil
	})
}

// mergeMeta copies the metadata a merged record carries (or drops the
// output's, which described the record it replaces). The place names come
// along as they are and the output forgets its places version, so that
// its next build resolves them again with its own table. A video frame
// may come from an index whose videos were read by older code: the output
// forgets its video metadata version too (its next full build probes its
// videos once more, which costs no decode).
func (t *wtx) mergeMeta(rec mergeRec) error {
	if err := t.deleteMeta(rec.path); err != nil {
		return err
	}
	if v, _, ok := SplitFrame(rec.path); ok {
		if err := t.meta.Delete(kVideoMeta); err != nil {
			return err
		}
		if err := deleteIn(t.tx, bVideoRead, v); err != nil { // read by the other index's code
			return err
		}
	}
	if rec.meta == nil {
		return nil
	}
	if err := t.meta.Delete(kPlaces); err != nil {
		return err
	}
	if _, err := decodeMeta(rec.meta, newInterner()); err != nil {
		return fmt.Errorf("metadata record of %s: %w", rec.path, err)
	}
	bk, err := t.tx.CreateBucketIfNotExists(bPhotoMeta)
	if err != nil {
		return err
	}
	t.dirtyPath(rec.path)
	if err := bk.Put([]byte(rec.path), rec.meta); err != nil {
		return err
	}
	return t.refreshLive(rec.path) // whether a movie names it here, not there
}

// TakenTime is the capture time as a time.Time: in a fixed zone of the
// camera's offset when known, else in UTC standing for the wall clock;
// false when there is no time.
func (m Meta) TakenTime() (time.Time, bool) {
	if m.TakenSource == "" {
		return time.Time{}, false
	}
	t := time.Unix(m.Taken, int64(m.TakenNs)).UTC()
	if !m.HasOffset {
		return t, true
	}
	off := int(m.Offset) * 60
	return time.Unix(m.Taken-int64(off), int64(m.TakenNs)).In(time.FixedZone("", off)), true
}

// TakenText is the capture time in RFC 3339 ("2019-07-01T12:34:56.05+10:00"),
// without a zone when the offset is unknown ("2019-07-01T12:34:56"); "" when
// there is no time.
func (m Meta) TakenText() string {
	t, ok := m.TakenTime()
	switch {
	case !ok:
		return ""
	case m.HasOffset:
		return t.Format(time.RFC3339Nano)
	}
	return t.Format("2006-01-02T15:04:05.999999999")
}
