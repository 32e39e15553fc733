package store

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// colMeta is a random Meta from a few values of each field, so that files
// share places, cameras and sometimes everything.
func colMeta(r *rand.Rand) Meta {
	m := Meta{Taken: int64(r.IntN(4)) * 86400 * 400, TakenSource: TakenEXIF, Make: "Maker", Model: fmt.Sprint("M", r.IntN(3))}
	switch r.IntN(4) {
	case 0:
		m.TakenSource, m.Taken = "", 0
	case 1:
		m.TakenSource = TakenMtime
	}
	if r.IntN(2) == 0 {
		m.HasGPS, m.Lat, m.Lon = true, float64(r.IntN(3))-1.5, float64(r.IntN(3))+0.25
		m.City, m.Country, m.CountryCode = fmt.Sprint("Town ", r.IntN(3)), "Land", "LD"
	}
	if r.IntN(5) == 0 {
		m.Make, m.Model = "", ""
	}
	return m
}

// columnOK fails the test unless the index at path has a current column
// that agrees with its records (Check compares them).
func columnOK(t *testing.T, path, when string) {
	t.Helper()
	view(t, path, func(s *Snapshot) {
		col, err := s.MetaColumn()
		if err != nil || col == nil {
			t.Fatalf("%s: metadata column %v, %v: want a current one", when, col, err)
		}
		if err := s.Check(true); err != nil {
			t.Fatalf("%s: check: %v", when, err)
		}
	})
}

// TestMetaColumnFollowsRecords applies random batches (new files, copies
// sharing a vector, changed contents, metadata added, changed and
// dropped, failures, deletions, video frames, garbage collection, Forget
// and Merge) and checks after each that the column says what the records
// say.
func TestMetaColumnFollowsRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	r := rand.New(rand.NewPCG(26, 1))
	w := openW(t, path)
	var known []string        // paths with a record, in the order first put
	good := map[string]bool{} // of those, the ones with a vector (metadata allowed)
	pick := func() string { return known[r.IntN(len(known))] }
	for step := range 60 {
		var b Batch
		for range 1 + r.IntN(40) {
			switch op := r.IntN(10); {
			case op < 4 || len(known) == 0: // a new file, often a copy of known content
				p := fmt.Sprintf("/p/%d/%04d.jpg", r.IntN(3), r.IntN(3000))
				if r.IntN(6) == 0 {
					p = fmt.Sprintf("/v/%d.mp4%s%d", r.IntN(20), FrameSep, r.IntN(5))
				}
				c := r.IntN(300)
				b.Put(p, File{Hash: hashOf(fmt.Sprint(c))}, vec(uint64(c), 8))
				if r.IntN(4) > 0 {
					b.PutMeta(p, colMeta(r))
				}
				if _, ok := good[p]; !ok {
					known = append(known, p)
				}
				good[p] = true
			case op < 6:
				if p := pick(); good[p] {
					b.PutMeta(p, colMeta(r))
				}
			case op < 7:
				p := pick()
				if _, ok := good[p]; ok {
					b.Put(p, File{Err: "bad"}, nil)
					good[p] = false
				}
			case op < 9:
				p := pick()
				b.Delete(p)
				delete(good, p)
			default: // content changed: a new vector
				p := pick()
				if _, ok := good[p]; ok {
					c := 300 + r.IntN(300)
					b.Put(p, File{Hash: hashOf(fmt.Sprint(c))}, vec(uint64(c), 8))
					good[p] = true
				}
			}
		}
		commit(t, w, &b)
		if step%7 == 0 {
			gc(t, w)
		}
		columnOK(t, path, fmt.Sprint("step ", step))
	}
	closeW(t, w)
	if _, err := Forget(path, []string{"/p/1"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	columnOK(t, path, "after Forget")

	other := filepath.Join(dir, "y.db")
	w2 := openW(t, other)
	var b Batch
	for i := range 50 {
		p := fmt.Sprintf("/p/0/%04d.jpg", i*7)
		b.Put(p, File{Hash: hashOf(fmt.Sprint(i * 3))}, vec(uint64(i*3), 8))
		b.PutMeta(p, colMeta(r))
	}
	commit(t, w2, &b)
	closeW(t, w2)
	out := filepath.Join(dir, "m.db")
	if _, err := Merge(out, []string{path, other}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	columnOK(t, out, "after Merge")
}

// TestMetaColumnAfterOlderWriter: a write that does not keep the column (a
// clipidx from before it) leaves it stale; readers must not trust it, and
// the next Writer transaction rebuilds it.
func TestMetaColumnAfterOlderWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Hash: hashOf("a")}, vec(1, 8))
	b.PutMeta("/p/a.jpg", Meta{Taken: 1e9, TakenSource: TakenEXIF, City: "Paris"})
	commit(t, w, &b)
	columnOK(t, path, "first commit")
	closeW(t, w)

	// The older writer changes a's place, as the records say it.
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bPhotoMeta).Put([]byte("/p/a.jpg"), encodeMeta(Meta{Taken: 1e9, TakenSource: TakenEXIF, City: "Lyon"}))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	view(t, path, func(s *Snapshot) {
		if col, err := s.MetaColumn(); col != nil || err != nil {
			t.Errorf("after a write that did not keep it: column %v, %v; want none", col, err)
		}
	})

	w = openW(t, path)
	var b2 Batch
	b2.Put("/p/b.jpg", File{Hash: hashOf("b")}, vec(2, 8))
	commit(t, w, &b2)
	columnOK(t, path, "next commit")
	view(t, path, func(s *Snapshot) {
		col, _ := s.MetaColumn()
		f, _ := file(t, s, "/p/a.jpg")
		ch, ok := col.Chunk(f.Vec)
		slot := int((f.Vec - 1) % ChunkSlots)
		if !ok || ch.Place(slot) == 0 || col.Places[ch.Place(slot)-1].City != "Lyon" {
			t.Errorf("a's place in the rebuilt column: %v (chunk %v), want Lyon", col.Places, ok)
		}
	})
}

// TestMetaColumnDamageMended: a column that disagrees with the records is
// reported by Check and rebuilt by a Reindex writer, which keeps the
// index (no backup, every record still there).
func TestMetaColumnDamageMended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	for i := range 20 {
		p := fmt.Sprintf("/p/%02d.jpg", i)
		b.Put(p, File{Hash: hashOf(p)}, vec(uint64(i), 8))
		b.PutMeta(p, Meta{Taken: int64(i) * 1e7, TakenSource: TakenEXIF, City: "Paris"})
	}
	commit(t, w, &b)
	closeW(t, w)
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bMetaCol)
		v := append([]byte(nil), bk.Get(colChunkKey(0))...)
		v[1+ChunkSlots+8*3] ^= 0x40 // vector 4's date
		if err := bk.Put(colChunkKey(0), v); err != nil {
			return err
		}
		return bk.Put(kColStamp, colStamp(uint64(tx.ID()))) // damage, not an older writer
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(path); err == nil || !onlyColumn(err) {
		t.Fatalf("Check of a damaged column: %v, want a metadata column error", err)
	}
	w, err = OpenWriter(path, testID, WriterOptions{Reindex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeW(t, w)
	if w.Backup() != "" {
		t.Errorf("the column's damage moved the index aside to %s", w.Backup())
	}
	columnOK(t, path, "after a Reindex writer")
	view(t, path, func(s *Snapshot) {
		if n := len(paths(t, s, "/p")); n != 20 {
			t.Errorf("%d records after mending, want 20", n)
		}
	})
}

// TestVariantReader: the cursor reader gives what a lookup gives, asked in
// ascending order with small and large steps, and after a step back.
func TestVariantReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	for i := range 600 {
		p, q := fmt.Sprintf("/p/%04d.jpg", i), fmt.Sprintf("/q/%04d.jpg", i)
		b.Put(p, File{Hash: hashOf(p)}, vec(uint64(i), 8))
		b.PutMeta(p, Meta{Taken: 1e9, TakenSource: TakenEXIF})
		if i%3 == 0 || i > 500 { // a copy dated otherwise: its vector's files differ
			b.Put(q, File{Hash: hashOf(p)}, nil)
			b.PutMeta(q, Meta{Taken: 2e9 + int64(i), TakenSource: TakenMtime})
		}
	}
	commit(t, w, &b)
	closeW(t, w)
	view(t, path, func(s *Snapshot) {
		col, err := s.MetaColumn()
		if err != nil || col == nil {
			t.Fatal(col, err)
		}
		r := rand.New(rand.NewPCG(2, 2))
		vr := col.VariantReader()
		id, mixed := VecID(0), 0
		for range 3000 {
			switch x := r.IntN(20); {
			case x == 0 && id > 50:
				id -= VecID(r.IntN(50))
			case x == 1:
				id += VecID(r.IntN(300))
			default:
				id += VecID(r.IntN(3))
			}
			id = id%650 + 1
			got, ok := vr.Variants(id)
			want, wantOK := col.Variants(id)
			if ok != wantOK || ok && (got.Len() != want.Len() || got.Taken(got.Len()-1) != want.Taken(want.Len()-1)) {
				t.Fatalf("vector %d: reader %v %d, lookup %v %d", id, ok, got.Len(), wantOK, want.Len())
			}
			if ok {
				mixed++
			}
		}
		if mixed < 500 {
			t.Errorf("only %d of the lookups found variants", mixed)
		}
	})
}

// rawUpdate changes the index at path as another program would, the
// column's stamp left as fn leaves it.
func rawUpdate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestMetaColumnNeverBlocksWrites: a column of another format (a clipidx
// with an older layout), a dictionary that does not decode and a metadata
// record that does not decode never make a commit fail: readers fall back
// on the records, the next commit makes the column again, and the index
// is as usable as before.
func TestMetaColumnNeverBlocksWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tx *bolt.Tx) error
		check  bool // Check passes afterwards (the damage is in derived data only)
	}{
		{"older format", func(tx *bolt.Tx) error {
			bk := tx.Bucket(bMetaCol)
			if err := bk.Put(binary.BigEndian.AppendUint32([]byte{'m'}, 1), appendStr(appendStr(nil, "PENTAX"), "K-1")); err != nil {
				return err // a camera of two fields, as format 1 wrote it
			}
			return bk.Put(kColStamp, binary.BigEndian.AppendUint32(u64(uint64(tx.ID())), 1))
		}, true},
		{"dictionary", func(tx *bolt.Tx) error {
			bk := tx.Bucket(bMetaCol)
			if err := bk.Put(binary.BigEndian.AppendUint32([]byte{'m'}, 1), []byte{0xff, 0xff}); err != nil {
				return err
			}
			return bk.Put(kColStamp, colStamp(uint64(tx.ID())))
		}, false},
		{"metadata record", func(tx *bolt.Tx) error {
			if err := tx.Bucket(bPhotoMeta).Put([]byte("/p/03.jpg"), []byte{metaVersion, 0, 9}); err != nil {
				return err
			}
			return tx.Bucket(bMetaCol).Put(kColStamp, colStamp(uint64(tx.ID())))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			w := openW(t, path)
			var b Batch
			for i := range 10 {
				p := fmt.Sprintf("/p/%02d.jpg", i)
				b.Put(p, File{Hash: hashOf(p)}, vec(uint64(i), 8))
				b.PutMeta(p, Meta{Taken: int64(i) * 1e7, TakenSource: TakenEXIF, Make: "PENTAX", Model: "K-1", Lens: "31mm"})
			}
			commit(t, w, &b)
			closeW(t, w)
			rawUpdate(t, path, tc.damage)
			if tc.name != "metadata record" {
				view(t, path, func(s *Snapshot) {
					if col, err := s.MetaColumn(); col != nil || err != nil {
						t.Errorf("a column that cannot be read is served: %v, %v", col, err)
					}
				})
			}
			w = openW(t, path)
			var b2 Batch
			b2.Put("/p/00.jpg", File{Hash: hashOf("changed")}, vec(99, 8))
			b2.PutMeta("/p/00.jpg", Meta{Taken: 5, TakenSource: TakenEXIF})
			b2.Put("/q/03.jpg", File{Hash: hashOf("/p/03.jpg")}, nil) // a copy: its vector's entry is made again
			commit(t, w, &b2)
			view(t, path, func(s *Snapshot) {
				col, err := s.MetaColumn()
				if col == nil || err != nil {
					t.Fatalf("after a commit: column %v, %v; want one", col, err)
				}
				if len(col.Cameras) != 1 || col.Cameras[0] != (ColumnCamera{"PENTAX", "K-1", "31mm"}) {
					t.Errorf("cameras %v", col.Cameras)
				}
				err = s.Check(true)
				if tc.check && err != nil {
					t.Errorf("check: %v", err)
				}
				if err != nil && strings.Contains(err.Error(), "metadata column") {
					t.Errorf("check finds the column wrong after it was made again: %v", err)
				}
			})
		})
	}
}
