package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigIndex writes an index spread over many pages (a few hundred files and
// vectors) and returns its path and size.
func bigIndex(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	for c := 0; c < 4; c++ {
		var b Batch
		for i := 0; i < 100; i++ {
			n := c*100 + i
			b.Put(fmt.Sprintf("/photos/%04d-%s.jpg", n, strings.Repeat("x", 40)), File{Hash: hashOf(fmt.Sprint(n))}, vec(uint64(n+1), 8))
		}
		if err := w.Commit(&b); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 8*4096 {
		t.Fatalf("index is only %d bytes; the damage tests need more pages", fi.Size())
	}
	return path, fi.Size()
}

// TestTruncatedIndex: a file cut short (a full disk, a copy interrupted)
// made bbolt read its memory map past the end of the file, a SIGBUS that
// killed the process whatever recover did. Every way in must now report
// ErrCorrupt, and a Reindex writer must move the file aside and start over.
func TestTruncatedIndex(t *testing.T) {
	for _, size := range []int64{10000, 3 * 4096, 4096, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			path, _ := bigIndex(t)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			if r, err := OpenReader(path, ReaderOptions{}); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					r.View(func(s *Snapshot) error { _, err = s.Stats(); return err })
					r.Close()
				}
				t.Errorf("OpenReader: %v, want ErrCorrupt", err)
			}
			if err := Check(path); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check: %v, want ErrCorrupt", err)
			}
			if _, err := Forget(path, []string{"/photos"}, WriterOptions{}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Forget: %v, want ErrCorrupt", err)
			}
			if w, err := OpenWriter(path, testID, WriterOptions{}); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					w.Close()
				}
				t.Errorf("OpenWriter: %v, want ErrCorrupt", err)
			}
			w, err := OpenWriter(path, testID, WriterOptions{Reindex: true})
			if err != nil {
				t.Fatalf("OpenWriter with Reindex: %v", err)
			}
			defer w.Close()
			if w.Backup() == "" {
				t.Fatal("Reindex did not move the damaged file aside")
			}
			if fi, err := os.Stat(w.Backup()); err != nil || fi.Size() != size {
				t.Errorf("backup %s: %v, size %v, want the %d damaged bytes", w.Backup(), err, fi, size)
			}
			var b Batch
			b.Put("/p/new", File{Hash: hashOf("N")}, vec(3, 8))
			if err := w.Commit(&b); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, path, false)
		})
	}
}
