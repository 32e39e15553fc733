package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestReindexRecoversDamagedIndex: a file bbolt cannot open, or one with a
// corrupt record, is refused with a way forward (--reindex); a Reindex
// writer moves it aside as <db>.corrupt-<time> and starts a fresh index.
func TestReindexRecoversDamagedIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"both meta pages zeroed", func(t *testing.T, path string) {
			w := openW(t, path)
			var b Batch
			b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
			commit(t, w, &b)
			closeW(t, w)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 2*os.Getpagesize()), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"meta bucket lost", func(t *testing.T, path string) {
			w := openW(t, path)
			var b Batch
			b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
			commit(t, w, &b)
			if err := w.update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bMeta) }); err != nil {
				t.Fatal(err)
			}
			closeW(t, w)
		}},
		{"cut to 12 bytes", func(t *testing.T, path string) {
			w := openW(t, path)
			var b Batch
			b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
			commit(t, w, &b)
			closeW(t, w)
			if err := os.Truncate(path, 12); err != nil {
				t.Fatal(err)
			}
		}},
		{"corrupt record", func(t *testing.T, path string) {
			w := openW(t, path)
			var b Batch
			b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
			commit(t, w, &b)
			if err := w.update(func(tx *bolt.Tx) error { return tx.Bucket(bFiles).Put([]byte("/p/a"), []byte{9, 9}) }); err != nil {
				t.Fatal(err)
			}
			closeW(t, w)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.db")
			tc.damage(t, path)
			damaged, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			check := func() error {
				r, err := OpenReader(path, ReaderOptions{})
				if err != nil {
					return err
				}
				err = r.View(func(s *Snapshot) error {
					if err := s.Files("", func(string, File) error { return nil }); err != nil {
						return err
					}
					return s.Check(true)
				})
				return errors.Join(err, r.Close())
			}
			err = check()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "--reindex") {
				t.Errorf("reading the damaged index: %v, want ErrCorrupt naming --reindex", err)
			}
			w, err := OpenWriter(path, testID, WriterOptions{Reindex: true})
			if err != nil {
				t.Fatalf("reindex: %v", err)
			}
			var b Batch
			b.Put("/p/new", File{Hash: hashOf("N")}, vec(3, 8))
			commit(t, w, &b)
			closeW(t, w)
			mustCheck(t, path, false)
			backups, err := filepath.Glob(path + ".corrupt-*")
			if err != nil || len(backups) != 1 {
				t.Fatalf("backups %v (%v), want one", backups, err)
			}
			if kept, err := os.ReadFile(backups[0]); err != nil || string(kept) != string(damaged) {
				t.Errorf("backup differs from the damaged file (%v)", err)
			}
			if w.Backup() != backups[0] {
				t.Errorf("Writer.Backup() = %q, want %q", w.Backup(), backups[0])
			}
		})
	}
}

// TestGuardLetsCallerPanicsThrough: a panic in bbolt's or store's reading
// code means a damaged index (ErrCorrupt); a panic in the caller's View
// callback or Files visitor is a bug elsewhere and must propagate, not be
// reported as damage that --reindex would fix.
func TestGuardLetsCallerPanicsThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
	commit(t, w, &b)
	closeW(t, w)
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, tc := range []struct {
		name string
		fn   func(s *Snapshot) error
	}{
		{"View callback", func(s *Snapshot) error { panic("caller bug") }},
		{"Files visitor", func(s *Snapshot) error {
			return s.Files("", func(string, File) error { panic("caller bug") })
		}},
	} {
		got := func() (p any) {
			defer func() { p = recover() }()
			err := r.View(tc.fn)
			t.Errorf("%s: View returned %v instead of panicking", tc.name, err)
			return nil
		}()
		if got != "caller bug" {
			t.Errorf("%s: recovered %v, want the caller's panic", tc.name, got)
		}
	}
	// A panic raised inside store's own code reading a malformed value.
	err = r.View(func(s *Snapshot) error { Chunk{}.Live(0); return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("panic in store code: %v, want ErrCorrupt", err)
	}
}
