package store

import (
	"bytes"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestLiveMovie: the movie recorded as a still's Live Photo movie is found
// from the still (its name in another case too), and only a record that
// names that still: not a frame, a photo of the same stem, a movie that
// names another still, nor a name that merely begins with the stem.
func TestLiveMovie(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	live := func(still string) File {
		return File{Size: 5, Kind: KindLiveVideo, Err: LiveVideoNote + still}
	}
	var b Batch
	b.Put("/p/IMG_1.HEIC", File{Size: 1, Hash: hashOf("1")}, vec(1, 8))
	b.Put("/p/IMG_1.MOV", live("IMG_1.HEIC"), nil)
	b.Put("/p/IMG_1.1.MOV", live("IMG_1.HEIC"), nil) // another stem
	b.Put("/p/Beach.jpg", File{Size: 1, Hash: hashOf("2")}, vec(2, 8))
	b.Put("/p/beach.mov", live("Beach.jpg"), nil)
	b.Put("/p/IMG_2.JPG", File{Size: 1, Hash: hashOf("3")}, vec(3, 8))
	b.Put("/p/IMG_2.MOV#t=0", File{Size: 1, Hash: hashOf("4")}, vec(4, 8))
	b.Put("/p/IMG_3.JPG", File{Size: 1, Hash: hashOf("5")}, vec(5, 8))
	b.Put("/p/IMG_3.MOV", live("IMG_3.HEIC"), nil) // names another still
	b.Put("/p/IMG_30.MOV", live("IMG_3.JPG"), nil)
	b.Put("/p/IMG_4.JPG", File{Size: 1, Hash: hashOf("6")}, vec(6, 8))
	b.Put("/p/IMG_4.MOV", File{Size: 3, Err: "not a readable video"}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	view(t, path, func(s *Snapshot) {
		for still, want := range map[string]string{
			"/p/IMG_1.HEIC": "/p/IMG_1.MOV", "/p/Beach.jpg": "/p/beach.mov",
			"/p/IMG_2.JPG": "", "/p/IMG_3.JPG": "", "/p/IMG_4.JPG": "", "/p/none.jpg": "", "/p/.jpg": "",
		} {
			got, err := s.LiveMovie(still)
			if err != nil || got != want {
				t.Errorf("LiveMovie(%s) = %q, %v; want %q", still, got, err, want)
			}
		}
	})
}

// TestLiveFlag: the metadata of a Live Photo's still says so (Meta.Live)
// exactly while a movie record names it, whichever comes first, whatever
// a PutMeta says; a merge sets it from the output's records; a write by
// an older clipidx, which keeps no flag, is mended by the next write.
func TestLiveFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	w := openW(t, path)
	live := File{Size: 5, Kind: KindLiveVideo, Err: LiveVideoNote + "IMG_1.HEIC"}
	commit := func(fill func(b *Batch)) {
		t.Helper()
		var b Batch
		fill(&b)
		if err := w.Commit(&b); err != nil {
			t.Fatal(err)
		}
	}
	flags := func(db string) (still, other bool) {
		t.Helper()
		view(t, db, func(s *Snapshot) {
			m, _, _ := s.Meta("/p/IMG_1.HEIC")
			o, _, _ := s.Meta("/p/other.jpg")
			still, other = m.Live, o.Live
			if err := s.Check(true); err != nil {
				t.Errorf("check: %v", err)
			}
		})
		return
	}
	want := func(when string, still bool) {
		t.Helper()
		if s, o := flags(path); s != still || o {
			t.Errorf("%s: still's Live flag %v, other photo's %v; want %v, false", when, s, o, still)
		}
	}
	commit(func(b *Batch) {
		b.Put("/p/IMG_1.HEIC", File{Size: 1, Hash: hashOf("1")}, vec(1, 8))
		b.PutMeta("/p/IMG_1.HEIC", Meta{Width: 4})
		b.Put("/p/other.jpg", File{Size: 1, Hash: hashOf("2")}, vec(2, 8))
		b.PutMeta("/p/other.jpg", Meta{Live: true}) // not the caller's to say
	})
	want("a still alone", false)
	commit(func(b *Batch) { b.Put("/p/IMG_1.MOV", live, nil) })
	want("its movie recorded after it", true)
	commit(func(b *Batch) { b.PutMeta("/p/IMG_1.HEIC", Meta{Width: 5}) })
	want("its metadata written again", true)
	commit(func(b *Batch) { b.Delete("/p/IMG_1.MOV") })
	want("its movie removed", false)
	commit(func(b *Batch) {
		b.Delete("/p/IMG_1.HEIC")
		b.Put("/p/IMG_1.MOV", live, nil)
		b.Put("/p/IMG_1.HEIC", File{Size: 1, Hash: hashOf("1")}, vec(1, 8))
		b.PutMeta("/p/IMG_1.HEIC", Meta{Width: 6})
	})
	want("the movie recorded before the still", true)
	commit(func(b *Batch) { b.Put("/p/IMG_1.MOV", File{Size: 9, Err: "not a readable video"}, nil) })
	want("the movie no Live Photo's any more", false)
	commit(func(b *Batch) { b.Put("/p/IMG_1.MOV", live, nil) })
	want("a Live Photo's again", true)
	w.Close()

	out := filepath.Join(dir, "out.db")
	if _, err := Merge(out, []string{path}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, o := flags(out); !s || o {
		t.Errorf("merged: still's Live flag %v, other photo's %v; want true, false", s, o)
	}

	// An older clipidx removes the movie's record and keeps no flag.
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if err := m.Put(kFailed, u64(getU64(m.Get(kFailed))-1)); err != nil {
			return err
		}
		return tx.Bucket(bFiles).Delete([]byte("/p/IMG_1.MOV"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, _ := flags(path); !s {
		t.Errorf("the flag moved without a write of this package")
	}
	w = openW(t, path)
	defer w.Close()
	if err := w.AddRoots([]string{"/p"}); err != nil {
		t.Fatal(err)
	}
	want("the next write", false)
}

// TestLiveFlagBesideDamagedRecord: a record that does not decode beside a
// still (found by the seek for its movie) fails no write of the still's
// metadata; Check reports the record.
func TestLiveFlagBesideDamagedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/IMG_1.HEIC", File{Size: 1, Hash: hashOf("1")}, vec(1, 8))
	b.Put("/p/IMG_1.AAE", File{Size: 3, Err: "not an image"}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bFiles)
		return bk.Put([]byte("/p/IMG_1.AAE"), append(bytes.Clone(bk.Get([]byte("/p/IMG_1.AAE"))), 0xff, 0xff, 0xff))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	view(t, path, func(s *Snapshot) {
		if _, err := s.LiveMovie("/p/IMG_1.HEIC"); err == nil {
			t.Fatal("the damaged record decodes: the test would prove nothing")
		}
	})
	w = openW(t, path)
	defer w.Close()
	b.Reset()
	b.PutMeta("/p/IMG_1.HEIC", Meta{Width: 4})
	if err := w.Commit(&b); err != nil {
		t.Errorf("metadata of a still beside a damaged record: %v", err)
	}
}
