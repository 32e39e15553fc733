package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var metaSamples = []Meta{
	{},
	{Taken: 1561939200, TakenNs: 123000000, Offset: -420, HasOffset: true, TakenSource: TakenEXIF,
		HasGPS: true, Lat: -33.8688, Lon: 151.2093, HasAlt: true, Alt: -12.5,
		Make: "PENTAX", Model: "PENTAX K-1", Lens: "smc PENTAX-FA 31mm F1.8 AL Limited", Width: 7360, Height: 4912,
		City: "Sydney", Region: "New South Wales", Country: "Australia", CountryCode: "AU"},
	{Taken: -86400 * 365, TakenSource: TakenMtime, Offset: 60, HasOffset: true, Width: 1, Height: 2},
	{Taken: 1e12, TakenSource: "custom source", HasGPS: true, Lat: 90, Lon: -180, MotionRead: true},
	{Taken: 7, TakenSource: TakenEXIF, Make: "Google", Model: "Pixel 8", Motion: true, MotionRead: true},
	{Taken: 5, TakenSource: TakenVideo, Make: "Ünïcode ✓"},
}

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range metaSamples {
		b := encodeMeta(m)
		got, err := decodeMeta(b, newInterner())
		if err != nil || got != m {
			t.Errorf("round trip %+v = %+v, %v", m, got, err)
		}
		for n := 0; n < len(b); n++ {
			if _, err := decodeMeta(b[:n], newInterner()); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%+v cut to %d bytes decodes (%v)", m, n, err)
			}
		}
		if _, err := decodeMeta(append(b, 0), newInterner()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v with a trailing byte decodes", m)
		}
	}
}

func FuzzDecodeMeta(f *testing.F) {
	for _, m := range metaSamples {
		f.Add(encodeMeta(m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b, newInterner())
		if err == nil {
			if again, err := decodeMeta(encodeMeta(m), newInterner()); err != nil || (again != m && !(m.Lat != m.Lat || m.Lon != m.Lon || m.Alt != m.Alt)) {
				t.Fatalf("re-encode of %+v: %+v, %v", m, again, err)
			}
		}
	})
}

// TestMetaLife: metadata follows its record through put, change, failure,
// delete, merge and check; EachMeta lists it in path order.
func TestMetaLife(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "i.db")
	w := openW(t, path)
	var b Batch
	for i, p := range []string{"/p/c.jpg", "/p/a.jpg", "/p/b.jpg"} {
		b.Put(p, File{Size: 1, Hash: hashOf(p)}, vec(uint64(i), 8))
		b.PutMeta(p, metaSamples[1+i])
	}
	b.SetPlacesVersion("table 1")
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	var order []string
	err := w.View(func(s *Snapshot) error {
		if v := s.PlacesVersion(); v != "table 1" {
			t.Errorf("places version %q", v)
		}
		return s.EachMeta(func(p string, m Meta) error {
			order = append(order, p)
			if want := map[string]Meta{"/p/c.jpg": metaSamples[1], "/p/a.jpg": metaSamples[2], "/p/b.jpg": metaSamples[3]}[p]; m != want {
				t.Errorf("%s: %+v, want %+v", p, m, want)
			}
			return nil
		})
	})
	if err != nil || fmt.Sprint(order) != "[/p/a.jpg /p/b.jpg /p/c.jpg]" {
		t.Fatalf("EachMeta order %v, %v", order, err)
	}
	// A failure and a delete drop the metadata; a PutMeta without a file
	// record fails the commit.
	b.Reset()
	b.Put("/p/a.jpg", File{Size: 2, Err: "decode: bad"}, nil)
	b.Delete("/p/b.jpg")
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.PutMeta("/p/none.jpg", metaSamples[1])
	if err := w.Commit(&b); err == nil {
		t.Error("metadata of a path with no record was committed")
	}
	err = w.View(func(s *Snapshot) error {
		for p, want := range map[string]bool{"/p/a.jpg": false, "/p/b.jpg": false, "/p/c.jpg": true, "/p/none.jpg": false} {
			if _, ok, err := s.Meta(p); ok != want || err != nil {
				t.Errorf("Meta(%s) = %v, %v; want %v", p, ok, err, want)
			}
		}
		return s.Check(true) // the deleted file's vector waits for GC
	})
	if err != nil {
		t.Fatal(err)
	}
	closeW(t, w)

	// Merge carries the metadata and forgets the places version.
	out := filepath.Join(dir, "out.db")
	if _, err := Merge(out, []string{path}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(out, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.View(func(s *Snapshot) error {
		m, ok, err := s.Meta("/p/c.jpg")
		if !ok || err != nil || m != metaSamples[1] {
			t.Errorf("merged metadata %+v, %v, %v", m, ok, err)
		}
		if v := s.PlacesVersion(); v != "" {
			t.Errorf("merged index keeps places version %q", v)
		}
		return s.Check(false)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckMeta: a damaged metadata record and one without a file are
// reported.
func TestCheckMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Size: 1, Hash: hashOf("a")}, vec(1, 8))
	b.PutMeta("/p/a.jpg", metaSamples[1])
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bPhotoMeta)
		if err := bk.Put([]byte("/p/a.jpg"), []byte{1, 0}); err != nil {
			return err
		}
		return bk.Put([]byte("/p/ghost.jpg"), encodeMeta(metaSamples[2]))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.View(func(s *Snapshot) error { return s.Check(false) })
	for _, want := range []string{"metadata /p/a.jpg", "metadata /p/ghost.jpg: no file record"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v; want %q", err, want)
		}
	}
}

// TestMetaVideoVersion: the video metadata version is recorded, forgotten
// by 0 and by a merge of video frames (not of photos), and Check reports a
// damaged one.
func TestMetaVideoVersion(t *testing.T) {
	dir := t.TempDir()
	version := func(path string) uint64 {
		t.Helper()
		r, err := OpenReader(path, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var v uint64
		if err := r.View(func(s *Snapshot) (err error) { v, err = s.VideoMetaVersion(); return err }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	commit := func(path string, fill func(b *Batch)) { t.Helper(); commitTo(t, path, fill) }
	photos, videos := filepath.Join(dir, "photos.db"), filepath.Join(dir, "videos.db")
	commit(photos, func(b *Batch) {
		b.Put("/p/a.jpg", File{Size: 1, Hash: hashOf("a")}, vec(1, 8))
		b.PutMeta("/p/a.jpg", metaSamples[1])
		b.SetVideoMetaVersion(7)
	})
	commit(videos, func(b *Batch) {
		b.Put(FramePath("/v/a.mov", 2), File{Size: 1, Hash: hashOf("f")}, vec(2, 8))
		b.PutMeta(FramePath("/v/a.mov", 2), metaSamples[4])
		b.SetVideoMetaVersion(7)
	})
	if v := version(videos); v != 7 {
		t.Errorf("version %d, want 7", v)
	}
	commit(videos, func(b *Batch) { b.SetVideoMetaVersion(0) })
	if v := version(videos); v != 0 {
		t.Errorf("version %d after setting 0, want none", v)
	}
	commit(videos, func(b *Batch) { b.SetVideoMetaVersion(7) })

	// Merged into an index that has the version: photos keep it, a video
	// frame makes the output forget it.
	out := filepath.Join(dir, "out.db")
	commit(out, func(b *Batch) { b.SetVideoMetaVersion(7) })
	if _, err := Merge(out, []string{photos}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := version(out); v != 7 {
		t.Errorf("version %d after merging photos, want 7 kept", v)
	}
	if _, err := Merge(out, []string{videos}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := version(out); v != 0 {
		t.Errorf("version %d after merging video frames, want it forgotten", v)
	}

	db, err := bolt.Open(videos, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put(kVideoMeta, []byte{7}) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := Check(videos); err == nil || !strings.Contains(err.Error(), "video metadata version") {
		t.Errorf("Check of a damaged version: %v", err)
	}
}

// TestMetaVideoRead: a video's read mark is kept until the version is
// recorded (which drops every mark), a merged frame drops its video's mark
// in the output (read by the other index's code), and Check reports a
// damaged mark.
func TestMetaVideoRead(t *testing.T) {
	dir := t.TempDir()
	marks := func(path string, videos ...string) []uint64 {
		t.Helper()
		r, err := OpenReader(path, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []uint64
		r.View(func(s *Snapshot) error {
			for _, v := range videos {
				got = append(got, s.VideoRead(v))
			}
			return nil
		})
		return got
	}
	commit := func(path string, fill func(b *Batch)) { t.Helper(); commitTo(t, path, fill) }
	out, other := filepath.Join(dir, "out.db"), filepath.Join(dir, "other.db")
	commit(out, func(b *Batch) {
		b.Put(FramePath("/v/a.mov", 2), File{Size: 1, Hash: hashOf("a")}, vec(1, 8))
		b.Put(FramePath("/v/b.mov", 2), File{Size: 1, Hash: hashOf("b")}, vec(2, 8))
		b.MarkVideoRead("/v/a.mov", 3)
		b.MarkVideoRead("/v/b.mov", 3)
	})
	if got := marks(out, "/v/a.mov", "/v/b.mov", "/v/c.mov"); !slices.Equal(got, []uint64{3, 3, 0}) {
		t.Errorf("marks %v, want [3 3 0]", got)
	}
	commit(other, func(b *Batch) {
		b.Put(FramePath("/v/a.mov", 2), File{Size: 1, MtimeNs: 1, Hash: hashOf("a2")}, vec(3, 8)) // later: it wins
	})
	if _, err := Merge(out, []string{other}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := marks(out, "/v/a.mov", "/v/b.mov"); !slices.Equal(got, []uint64{0, 3}) {
		t.Errorf("marks %v after merging a.mov's frame, want [0 3]", got)
	}
	commit(out, func(b *Batch) { b.SetVideoMetaVersion(3) })
	if got := marks(out, "/v/b.mov"); !slices.Equal(got, []uint64{0}) {
		t.Errorf("marks %v after the version was recorded, want none", got)
	}
	commit(out, func(b *Batch) { b.MarkVideoRead("/v/b.mov", 4) })
	db, err := bolt.Open(out, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bVideoRead).Put([]byte("/v/b.mov"), []byte{4}) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := Check(out); err == nil || !strings.Contains(err.Error(), "video read mark of /v/b.mov") {
		t.Errorf("Check of a damaged mark: %v", err)
	}
}

func TestTakenText(t *testing.T) {
	for _, c := range []struct {
		m    Meta
		want string
	}{
		{Meta{}, ""},
		{Meta{Taken: 1561984496, TakenNs: 50000000, Offset: 600, HasOffset: true, TakenSource: TakenEXIF}, "2019-07-01T12:34:56.05+10:00"},
		{Meta{Taken: 1561984496, Offset: -210, HasOffset: true, TakenSource: TakenEXIF}, "2019-07-01T12:34:56-03:30"},
		{Meta{Taken: 1561984496, TakenSource: TakenEXIF}, "2019-07-01T12:34:56"},
		{Meta{Taken: 0, TakenSource: TakenMtime, HasOffset: true}, "1970-01-01T00:00:00Z"},
	} {
		if got := c.m.TakenText(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
}

// BenchmarkEachMeta reads the metadata of n records, against reading their
// file records (Files) in the same run: the cost of a metadata filter over
// the whole index compared with the walk any listing already pays.
// CLIPIDX_BENCH_RECORDS sets n (default 100,000; the filter's target is
// 1,000,000).
func BenchmarkEachMeta(b *testing.B) {
	n := 100_000
	if v := os.Getenv("CLIPIDX_BENCH_RECORDS"); v != "" {
		fmt.Sscan(v, &n)
	}
	path := filepath.Join(b.TempDir(), "i.db")
	w, err := OpenWriter(path, testID, WriterOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	cities := []string{"Paris", "Chamonix-Mont-Blanc", "Sydney", "Bondi Beach", "Tokyo", "Nairobi"}
	var batch Batch
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/photos/%04d/%02d/IMG_%07d.jpg", 2000+i%25, i%12+1, i)
		batch.Put(p, File{Size: int64(i), Hash: hashOf(p)}, vec(uint64(i), 8))
		m := Meta{Taken: 946684800 + int64(i)*600, TakenSource: TakenEXIF, Make: "Apple", Model: "iPhone " + fmt.Sprint(8+i%7), Width: 4032, Height: 3024}
		if i%3 == 0 {
			m.HasGPS, m.Lat, m.Lon = true, float64(i%180)-90, float64(i%360)-180
			m.City, m.Country, m.CountryCode = cities[i%len(cities)], "Somewhere", "SW"
		}
		batch.PutMeta(p, m)
		if batch.Len() >= 20000 {
			if err := w.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := w.Commit(&batch); err != nil {
		b.Fatal(err)
	}
	closeW(b, w)
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.Run("EachMeta", func(b *testing.B) {
		for b.Loop() {
			hits := 0
			r.View(func(s *Snapshot) error {
				return s.EachMeta(func(_ string, m Meta) error {
					if m.HasGPS && m.Taken > 1e9 {
						hits++
					}
					return nil
				})
			})
		}
	})
	b.Run("Files", func(b *testing.B) {
		for b.Loop() {
			r.View(func(s *Snapshot) error {
				return s.Files("", func(string, File) error { return nil })
			})
		}
	})
}

// commitTo commits one batch, filled by fill, to the index at path
// (created if needed).
func commitTo(t *testing.T, path string, fill func(b *Batch)) {
	t.Helper()
	w := openW(t, path)
	var b Batch
	fill(&b)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
}

// TestMetaReadMark: a record's metadata read mark is kept with its
// metadata and goes with it when the record is deleted or fails; a mark
// without a file record is refused.
func TestMetaReadMark(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	mark := func(p string) uint64 {
		t.Helper()
		r, err := OpenReader(db, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var v uint64
		r.View(func(s *Snapshot) error { v = s.MetaRead(p); return nil })
		return v
	}
	commitTo(t, db, func(b *Batch) {
		for i, p := range []string{"/p/a.png", "/p/b.png", "/p/c.png"} {
			b.Put(p, File{Size: 1, Hash: hashOf(p)}, vec(uint64(i+1), 8))
			b.PutMeta(p, metaSamples[0])
			b.MarkMetaRead(p, 2)
		}
	})
	if mark("/p/a.png") != 2 || mark("/p/b.png") != 2 || mark("/p/none.png") != 0 {
		t.Fatalf("marks %d %d %d, want 2 2 0", mark("/p/a.png"), mark("/p/b.png"), mark("/p/none.png"))
	}
	commitTo(t, db, func(b *Batch) {
		b.Delete("/p/a.png")
		b.Put("/p/b.png", File{Size: 2, Hash: hashOf("b2"), Err: "broken", Kind: FailCorrupt}, nil)
		b.PutMeta("/p/c.png", metaSamples[1]) // metadata rewritten: the mark stays
	})
	if mark("/p/a.png") != 0 || mark("/p/b.png") != 0 || mark("/p/c.png") != 2 {
		t.Errorf("marks after delete, failure, rewrite: %d %d %d, want 0 0 2", mark("/p/a.png"), mark("/p/b.png"), mark("/p/c.png"))
	}
	w := openW(t, db)
	var b Batch
	b.MarkMetaRead("/p/ghost.png", 2)
	if err := w.Commit(&b); err == nil || !strings.Contains(err.Error(), "no file record") {
		t.Errorf("a mark of no record: %v", err)
	}
	if _, err := w.GC(); err != nil { // the vectors of a and b, as a build ends
		t.Fatal(err)
	}
	closeW(t, w)
	if err := Check(db); err != nil {
		t.Fatal(err)
	}
}

// TestMetaCounts: the summary read from the records' heads is what a
// whole decode of every record gives (counts, the first and last dated
// records, ties to the first in path order).
func TestMetaCounts(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	r := rand.New(rand.NewPCG(5, 5))
	commitTo(t, db, func(b *Batch) {
		for i := range 300 {
			p := fmt.Sprintf("/p/%03d.jpg", r.IntN(1000))
			m := metaSamples[r.IntN(len(metaSamples))]
			m.Taken += int64(r.IntN(5)) // ties among equal dates
			if m.TakenSource == "" {
				m.Taken = 0
			}
			b.Put(p, File{Size: 1, Hash: hashOf(p)}, vec(uint64(i+1), 8))
			b.PutMeta(p, m)
		}
	})
	rd, err := OpenReader(db, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.View(func(s *Snapshot) error {
		var want MetaSummary
		dated := 0
		s.EachMeta(func(_ string, m Meta) error {
			want.Records++
			if m.HasGPS {
				want.GPS++
			}
			if m.Motion {
				want.Motion++
			}
			switch m.TakenSource {
			case "":
				return nil
			case TakenMtime:
				want.Mtime++
			default:
				want.FromFile++
			}
			dated++
			if dated == 1 || m.Taken < want.First.Taken {
				want.First = m
			}
			if dated == 1 || m.Taken > want.Last.Taken {
				want.Last = m
			}
			return nil
		})
		got, err := s.MetaCounts()
		if err != nil || got != want {
			t.Errorf("MetaCounts = %+v, %v\nwant %+v", got, err, want)
		}
		if want.Mtime == 0 || want.FromFile == 0 || want.GPS == 0 || want.Motion == 0 || want.Records == dated {
			t.Errorf("the sample lacks a kind of record: %+v (%d dated)", want, dated)
		}
		return nil
	})
}

// TestStaleMetaAfterOlderWriter: a clipidx from before metadata removes a
// file's record alone, or records a failure over it, and leaves its
// metadata; the next write of this one drops it, so that Check passes
// (before, it called the index damaged for good).
func TestStaleMetaAfterOlderWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i.db")
	w := openW(t, path)
	var b Batch
	for i, p := range []string{"/p/a.jpg", "/p/gone.jpg", "/p/failed.jpg"} {
		b.Put(p, File{Size: int64(i + 1), Hash: hashOf(p)}, vec(uint64(i+1), 8))
		b.PutMeta(p, metaSamples[1])
	}
	commit(t, w, &b)
	// What the older writer does to the records (as this one would), and
	// leaves of the metadata: put back by bbolt directly, with no stamp.
	var old Batch
	old.Delete("/p/gone.jpg")
	old.Put("/p/failed.jpg", File{Size: 3, Err: "decode: truncated"}, nil)
	commit(t, w, &old)
	closeW(t, w)
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bPhotoMeta)
		if err := bk.Put([]byte("/p/gone.jpg"), encodeMeta(metaSamples[1])); err != nil {
			return err
		}
		return bk.Put([]byte("/p/failed.jpg"), encodeMeta(metaSamples[1]))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := Check(path); err == nil {
		t.Fatal("Check after the older writer: nil, want the stale metadata reported")
	}
	w = openW(t, path)
	var b2 Batch
	b2.Put("/p/new.jpg", File{Size: 9, Hash: hashOf("new")}, vec(9, 8))
	commit(t, w, &b2)
	closeW(t, w)
	if err := Check(path); err != nil {
		t.Errorf("Check after a write of this clipidx: %v, want nil", err)
	}
	view(t, path, func(s *Snapshot) {
		if _, ok, _ := s.Meta("/p/a.jpg"); !ok {
			t.Error("the metadata of a file still indexed was dropped")
		}
	})
}
