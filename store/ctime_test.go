package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// ctimesOf reads every record's ctime, by Files and by File.
func ctimesOf(t *testing.T, path string) map[string]int64 {
	t.Helper()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]int64{}
	err = r.View(func(s *Snapshot) error {
		return s.Files("", func(p string, f File) error {
			one, ok, err := s.File(p)
			if err != nil || !ok || one.CtimeNs != f.CtimeNs {
				t.Errorf("%s: File gives ctime %d (%v %v), Files %d", p, one.CtimeNs, ok, err, f.CtimeNs)
			}
			out[p] = f.CtimeNs
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCtimes: a record's ctime is kept beside it, read back by Files and
// File (along records without one), replaced or dropped by the next Put,
// dropped with the record, stamped only on a record that exists, carried
// by a merge; a ctime without its record (an older clipidx deleted it) is
// no fault.
func TestCtimes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "i.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Size: 1, MtimeNs: 2, CtimeNs: 30, Hash: hashOf("a")}, vec(1, 8))
	b.Put("/p/b.jpg", File{Size: 1, MtimeNs: 2, Hash: hashOf("b")}, vec(2, 8))
	b.Put("/p/c.jpg", File{Size: 1, MtimeNs: 2, CtimeNs: 31, Err: "decode: broken", Kind: FailCorrupt}, nil)
	b.Put("/p/d.jpg", File{Size: 1, MtimeNs: 2, CtimeNs: 32, Hash: hashOf("d")}, vec(4, 8))
	commit(t, w, &b)
	want := map[string]int64{"/p/a.jpg": 30, "/p/b.jpg": 0, "/p/c.jpg": 31, "/p/d.jpg": 32}
	check := func(what string) {
		t.Helper()
		got := ctimesOf(t, path)
		for p, c := range want {
			if got[p] != c {
				t.Errorf("%s: %s has ctime %d, want %d", what, p, got[p], c)
			}
		}
		r, err := OpenReader(path, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.View(func(s *Snapshot) error { return s.Check(true) }); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	check("first commit")

	b.Reset()
	b.StampCtime("/p/b.jpg", 40)                                                      // written without one: takes the file's
	b.StampCtime("/p/gone.jpg", 41)                                                   // no record: nothing
	b.Put("/p/a.jpg", File{Size: 1, MtimeNs: 2, CtimeNs: 50, Hash: hashOf("a")}, nil) // touched
	b.Put("/p/c.jpg", File{Size: 1, MtimeNs: 3, Err: "decode: broken", Kind: FailCorrupt}, nil)
	b.Delete("/p/d.jpg")
	commit(t, w, &b)
	want = map[string]int64{"/p/a.jpg": 50, "/p/b.jpg": 40, "/p/c.jpg": 0}
	check("second commit")
	err := w.update(func(tx *bolt.Tx) error {
		for _, p := range []string{"/p/gone.jpg", "/p/d.jpg"} {
			if tx.Bucket(bCtimes).Get([]byte(p)) != nil {
				t.Errorf("%s keeps a ctime", p)
			}
		}
		return tx.Bucket(bCtimes).Put([]byte("/p/orphan.jpg"), u64(7)) // as an older clipidx leaves it
	})
	if err != nil {
		t.Fatal(err)
	}
	check("an orphan ctime")
	closeW(t, w)

	out := filepath.Join(dir, "merged.db")
	if _, err := Merge(out, []string{path}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	got := ctimesOf(t, out)
	for p, c := range want {
		if got[p] != c {
			t.Errorf("merged: %s has ctime %d, want %d", p, got[p], c)
		}
	}
}
