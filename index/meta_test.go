package index

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/geo"
	"github.com/clipidx/clipidx/store"
)

// exifPNG is content fakePre decodes ("PNG") carrying an eXIf chunk with
// DateTimeOriginal and, when gps, a GPS position: laid out by hand (a
// big-endian TIFF: IFD0 → Make, EXIF IFD, GPS IFD).
func exifPNG(date string, gps bool, lat, lon float64, tag string) []byte {
	return exifPNGDated(0x9003, date, gps, lat, lon, tag)
}

// exifPNGDated is exifPNG with the date in dateTag (0x9003
// DateTimeOriginal, 0x9004 DateTimeDigitized).
func exifPNGDated(dateTag uint16, date string, gps bool, lat, lon float64, tag string) []byte {
	be := binary.BigEndian
	t := []byte("MM\x00*\x00\x00\x00\x08")
	type ent struct {
		tag, typ uint16
		count    uint32
		data     []byte
	}
	// ifd writes the entries at the end of t (their out-of-line data after
	// the IFD) and returns the IFD's offset.
	ifd := func(es []ent) uint32 {
		at := uint32(len(t))
		data := at + 2 + 12*uint32(len(es)) + 4
		t = be.AppendUint16(t, uint16(len(es)))
		var extra []byte
		for _, e := range es {
			t = be.AppendUint16(t, e.tag)
			t = be.AppendUint16(t, e.typ)
			t = be.AppendUint32(t, e.count)
			if len(e.data) <= 4 {
				t = append(t, append(e.data, make([]byte, 4-len(e.data))...)...)
			} else {
				t = be.AppendUint32(t, data+uint32(len(extra)))
				extra = append(extra, e.data...)
			}
		}
		t = be.AppendUint32(t, 0)
		t = append(t, extra...)
		return at
	}
	ascii := func(tag uint16, s string) ent { return ent{tag, 2, uint32(len(s) + 1), append([]byte(s), 0)} }
	dms := func(v float64) []byte {
		var b []byte
		b = be.AppendUint32(b, uint32(v*1e6))
		b = be.AppendUint32(b, 1e6)
		b = be.AppendUint32(b, 0)
		b = be.AppendUint32(b, 1)
		b = be.AppendUint32(b, 0)
		return be.AppendUint32(b, 1)
	}
	// IFD0 first, patched with the sub-IFD offsets once they are written.
	ifd0 := ifd([]ent{ascii(0x010f, "TestCam "+tag), {0x8769, 4, 1, make([]byte, 4)}, {0x8825, 4, 1, make([]byte, 4)}})
	var exifAt, gpsAt uint32
	if date != "" {
		exifAt = ifd([]ent{ascii(dateTag, date)})
	}
	if gps {
		ns, ew := "N", "E"
		if lat < 0 {
			ns, lat = "S", -lat
		}
		if lon < 0 {
			ew, lon = "W", -lon
		}
		gpsAt = ifd([]ent{ascii(1, ns), {2, 5, 3, dms(lat)}, ascii(3, ew), {4, 5, 3, dms(lon)}})
	}
	be.PutUint32(t[ifd0+2+12+8:], exifAt)
	be.PutUint32(t[ifd0+2+24+8:], gpsAt)
	chunk := func(typ string, body []byte) []byte {
		c := be.AppendUint32(nil, uint32(len(body)))
		c = append(c, typ...)
		c = append(c, body...)
		return be.AppendUint32(c, 0) // the CRC is not checked by readers here
	}
	out := []byte(png)
	out = append(out, chunk("eXIf", t)...)
	return append(out, chunk("IEND", nil)...)
}

func readMetas(t *testing.T, db string) (map[string]store.Meta, string) {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]store.Meta{}
	var version string
	err = r.View(func(s *store.Snapshot) error {
		version = s.PlacesVersion()
		return s.EachMeta(func(p string, m store.Meta) error { out[p] = m; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, version
}

// TestMetaBuild: a build records each file's metadata (EXIF date and GPS
// with its place; the mtime, so marked, without a date); a changed file
// is read again, a renamed file's metadata follows it, a failed or deleted
// file has none.
func TestMetaBuild(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	a, b, c, bad := filepath.Join(d, "a.png"), filepath.Join(d, "b.png"), filepath.Join(d, "c.png"), filepath.Join(d, "bad.png")
	write(t, a, string(exifPNG("2019:07:01 12:34:56", true, 45.9237, 6.8694, "a")))
	write(t, b, string(exifPNG("", true, -33.8688, 151.2093, "b")))
	write(t, c, png+"plain")
	write(t, bad, png+"CORRUPT")
	mt := time.Date(2020, 5, 6, 7, 8, 9, 0, time.Local)
	if err := os.Chtimes(c, mt, mt); err != nil {
		t.Fatal(err)
	}
	e := &fakeEnc{}
	if _, err := Build(context.Background(), db, []string{d}, opts(e)); err != nil {
		t.Fatal(err)
	}
	ms, version := readMetas(t, db)
	if want, _ := geo.Version(); version != want {
		t.Errorf("places version %q, want %q", version, want)
	}
	ma := ms[a]
	if ma.TakenSource != store.TakenEXIF || time.Unix(ma.Taken, 0).UTC().Format(time.DateTime) != "2019-07-01 12:34:56" ||
		!ma.HasGPS || ma.City != "Chamonix-Mont-Blanc" || ma.CountryCode != "FR" || ma.Make != "TestCam a" {
		t.Errorf("a: %+v", ma)
	}
	if mb := ms[b]; mb.TakenSource != store.TakenMtime || mb.City != "Sydney" {
		t.Errorf("b (no date: mtime): %+v", mb)
	}
	_, off := mt.Zone()
	if mc := ms[c]; mc.TakenSource != store.TakenMtime || mc.Taken != mt.Unix()+int64(off) || mc.HasGPS || mc.City != "" || !mc.HasOffset || int(mc.Offset) != off/60 {
		t.Errorf("c (mtime %v): %+v", mt, mc)
	}
	if _, ok := ms[bad]; ok {
		t.Errorf("a failed file has metadata")
	}

	// Change a, rename b, delete c.
	write(t, a, string(exifPNG("2021:01:02 03:04:05", false, 0, 0, "a2")))
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(a, later, later); err != nil {
		t.Fatal(err)
	}
	b2 := filepath.Join(d, "sub", "b2.png")
	if err := os.MkdirAll(filepath.Dir(b2), 0o755); err != nil {
		t.Fatal(err)
	}
	rename(t, b, b2)
	removeAll(t, c)
	if _, err := Build(context.Background(), db, []string{d}, opts(e)); err != nil {
		t.Fatal(err)
	}
	verify(t, db)
	ms, _ = readMetas(t, db)
	if ma := ms[a]; time.Unix(ma.Taken, 0).UTC().Year() != 2021 || ma.HasGPS || ma.City != "" || ma.Make != "TestCam a2" {
		t.Errorf("changed a: %+v", ma)
	}
	if mb, ok := ms[b2]; !ok || mb.City != "Sydney" || mb.Make != "TestCam b" {
		t.Errorf("renamed b: %+v, %v", mb, ok)
	}
	for _, p := range []string{b, c, bad} {
		if _, ok := ms[p]; ok {
			t.Errorf("%s still has metadata", p)
		}
	}
}

// TestMetaUpgrade: an index written before metadata existed (records and
// vectors only, as the previous clipidx wrote them) gains every file's
// metadata on its next build, with no model run and no re-embedding.
// olderIndex writes files and an index of them as an older clipidx left
// it: records with their vectors and, when mtimeDated, metadata that dates
// each by its file's time (no record has metadata otherwise).
func olderIndex(t *testing.T, db string, files map[string][]byte, mtimeDated bool) {
	t.Helper()
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var batch store.Batch
	for p, data := range files {
		write(t, p, string(data))
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		batch.Put(p, store.File{Size: st.Size(), MtimeNs: st.ModTime().UnixNano(), Hash: sha256.Sum256(data)}, expectVec(data))
		if mtimeDated {
			batch.PutMeta(p, *fileMeta(nil, st.ModTime().UnixNano()))
		}
	}
	if err := w.Commit(&batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMetaUpgrade(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	files := map[string][]byte{
		filepath.Join(d, "a.png"): exifPNG("2018:02:10 09:00:00", true, 40.7128, -74.006, "a"),
		filepath.Join(d, "b.png"): []byte(png + "b"),
	}
	olderIndex(t, db, files, false)
	e := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{d}, opts(e))
	if err != nil {
		t.Fatal(err)
	}
	if e.calls.Load() != 0 || sum.Unchanged != 2 || sum.Added+sum.Updated+sum.Reused != 0 {
		t.Fatalf("upgrade ran the model (%d calls) or re-indexed: %s", e.calls.Load(), sumOf(sum))
	}
	verify(t, db)
	ms, _ := readMetas(t, db)
	if m := ms[filepath.Join(d, "a.png")]; m.TakenSource != store.TakenEXIF || m.City != "New York City" {
		t.Errorf("a: %+v", m)
	}
	if m := ms[filepath.Join(d, "b.png")]; m.TakenSource != store.TakenMtime {
		t.Errorf("b: %+v", m)
	}
	// A third build has nothing to do.
	sum, err = Build(context.Background(), db, []string{d}, opts(e))
	if err != nil || e.calls.Load() != 0 || sum.Unchanged != 2 {
		t.Fatalf("third build: %v, %s", err, sumOf(sum))
	}
}

// TestMetaDateUpgrade: the photos an older clipidx dated by their file's
// time (it read DateTimeOriginal only) are read again once, with no model
// run: one with DateTimeDigitized alone gets that date; one with no date
// keeps its file's time, marked, and is not read again by later builds.
func TestMetaDateUpgrade(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	a, b := filepath.Join(d, "scan.png"), filepath.Join(d, "plain.png")
	files := map[string][]byte{a: exifPNGDated(0x9004, "2016:05:01 08:00:00", false, 0, 0, "a"), b: []byte(png + "b")}
	olderIndex(t, db, files, true) // what the older reader recorded: the file's time
	e := &fakeEnc{}
	build := func() int {
		t.Helper()
		reads := 0
		o := opts(e)
		o.Progress = func(ev Event) {
			if ev.Phase == "meta" {
				reads++
			}
		}
		sum, err := Build(context.Background(), db, []string{d}, o)
		if err != nil {
			t.Fatal(err)
		}
		if e.calls.Load() != 0 || sum.Unchanged != 2 {
			t.Fatalf("the upgrade ran the model (%d calls) or re-indexed: %s", e.calls.Load(), sumOf(sum))
		}
		return reads
	}
	if n := build(); n != 2 {
		t.Errorf("first build read %d photos again, want 2", n)
	}
	ms, _ := readMetas(t, db)
	if m := ms[a]; m.TakenSource != store.TakenEXIF || time.Unix(m.Taken, 0).UTC().Format(time.DateTime) != "2016-05-01 08:00:00" {
		t.Errorf("the photo with DateTimeDigitized: %+v", m)
	}
	if m := ms[b]; m.TakenSource != store.TakenMtime {
		t.Errorf("the photo without a date: %+v", m)
	}
	for i := range 2 {
		if n := build(); n != 0 {
			t.Errorf("build %d after the upgrade read %d photos again, want none", i+2, n)
		}
	}
	if err := store.Check(db); err != nil {
		t.Fatal(err)
	}
}

// TestMetaPlacesUpgrade: an index whose places came from another table has
// them resolved again by the next build, with no model run, and records
// the table's version.
func TestMetaPlacesUpgrade(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	p := filepath.Join(d, "a.png")
	write(t, p, string(exifPNG("2018:02:10 09:00:00", true, -1.2864, 36.8172, "a")))
	e := &fakeEnc{}
	if _, err := Build(context.Background(), db, []string{d}, opts(e)); err != nil {
		t.Fatal(err)
	}
	calls := e.calls.Load()
	// What an older table would have said.
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := readMetas(t, db)
	m := ms[p]
	m.City, m.Region, m.Country, m.CountryCode = "Old Name", "Old Region", "Old Country", "XX"
	var batch store.Batch
	batch.PutMeta(p, m)
	batch.SetPlacesVersion("an older table")
	if err := w.Commit(&batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), db, []string{d}, opts(e)); err != nil {
		t.Fatal(err)
	}
	ms, version := readMetas(t, db)
	if want, _ := geo.Version(); version != want || ms[p].City != "Nairobi" || ms[p].CountryCode != "KE" || e.calls.Load() != calls {
		t.Errorf("after the upgrade: version %q, %+v, %d model calls", version, ms[p], e.calls.Load()-calls)
	}
}

// TestMetaUpgradeInterrupted: a build stopped while it reads the metadata
// of an upgraded index keeps what it read, the index stays sound, and the
// next build reads the rest, still without the model.
func TestMetaUpgradeInterrupted(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var batch store.Batch
	const n = 40
	for i := range n {
		p := filepath.Join(d, fmt.Sprintf("%02d.png", i))
		data := exifPNG(fmt.Sprintf("2010:01:%02d 10:00:00", i%28+1), false, 0, 0, fmt.Sprint(i))
		write(t, p, string(data))
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		batch.Put(p, store.File{Size: st.Size(), MtimeNs: st.ModTime().UnixNano(), Hash: sha256.Sum256(data)}, expectVec(data))
	}
	if err := w.Commit(&batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	e := &fakeEnc{}
	o := opts(e)
	o.Workers = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = func(ev Event) {
		if ev.Phase == "meta" && ev.Done == 10 {
			cancel()
		}
	}
	if _, err := Build(ctx, db, []string{d}, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted build: %v", err)
	}
	verify(t, db)
	ms, _ := readMetas(t, db)
	if len(ms) < 10 || len(ms) >= n {
		t.Errorf("after the interruption %d of %d records have metadata, want at least the 10 read and not all", len(ms), n)
	}
	if _, err := Build(context.Background(), db, []string{d}, opts(e)); err != nil {
		t.Fatal(err)
	}
	if ms, _ = readMetas(t, db); len(ms) != n || e.calls.Load() != 0 {
		t.Errorf("after the next build %d of %d records have metadata, %d model calls", len(ms), n, e.calls.Load())
	}
	for p, m := range ms {
		if m.TakenSource != store.TakenEXIF {
			t.Errorf("%s: %+v", p, m)
		}
	}
}

// TestMetaMtimeEpoch: a file whose modification time is the epoch itself
// (mtime 0, as some archivers and reproducible builds leave) had no date,
// where a second later it had the file's time.
func TestMetaMtimeEpoch(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	a := filepath.Join(d, "a.png")
	write(t, a, png+"plain")
	epoch := time.Unix(0, 0)
	if err := os.Chtimes(a, epoch, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), db, []string{d}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	ms, _ := readMetas(t, db)
	_, off := epoch.In(time.Local).Zone()
	if m := ms[a]; m.TakenSource != store.TakenMtime || m.Taken != int64(off) || !m.HasOffset {
		t.Errorf("a file of mtime 0: %+v, want the epoch, from the mtime", m)
	}
}
