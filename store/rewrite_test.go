package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReaderDuringCopyOver: a reader opening an index while a backup is
// copied onto it in place (cp truncates the file and writes it from the
// start) read a torn header or a half-copied file and answered "index
// damaged: run --reindex" (serve: 500 with that advice), or "bad file
// descriptor" when bbolt met the emptied file. Each open now succeeds,
// finds no index (the emptied file), or says the file was being written
// (ErrFault, which serve answers 503); none calls it damaged.
func TestReaderDuringCopyOver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	backup := filepath.Join(dir, "backup.db")
	for _, p := range []struct {
		path string
		n    int
	}{{path, 3}, {backup, 3000}} {
		w := openW(t, p.path)
		var b Batch
		for i := range p.n {
			b.Put(fmt.Sprintf("/p/%05d", i), File{Hash: hashOf(fmt.Sprint(i))}, vec(uint64(i+1), 8))
		}
		commit(t, w, &b)
		closeW(t, w)
	}
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 8 << 10
	done := make(chan error, 1)
	go func() {
		var err error
		for range 4 { // cp onto the index, as a restore does, a few times
			f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if ferr != nil {
				err = ferr
				break
			}
			for off := 0; off < len(data); off += chunk {
				if _, err = f.Write(data[off:min(off+chunk, len(data))]); err != nil {
					break
				}
				time.Sleep(3 * time.Millisecond)
			}
			f.Close()
		}
		done <- err
	}()
	opens, torn := 0, 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		r, err := OpenReader(path, ReaderOptions{})
		opens++
		switch {
		case err == nil:
			r.Close()
		case errors.Is(err, ErrNoIndex):
		case errors.Is(err, ErrFault):
			torn++
		default:
			t.Fatalf("open %d during the copy: %v; want the index, no index, or ErrFault", opens, err)
		}
	}
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatalf("after the copy: %v", err)
	}
	r.Close()
	t.Logf("%d opens during the copies, %d answered ErrFault", opens, torn)
}

// TestReaderDuringPausedCopy: a copy onto the index that pauses half way
// (a slow disk, a network share) leaves a file that does not change for a
// while; a reader then still takes it for one being written (ErrFault),
// not for a damaged index.
func TestReaderDuringPausedCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	backup := filepath.Join(dir, "backup.db")
	for _, p := range []string{path, backup} {
		w := openW(t, p)
		var b Batch
		for i := range 2000 {
			b.Put(fmt.Sprintf("/p/%05d", i), File{Hash: hashOf(fmt.Sprint(i))}, vec(uint64(i+1), 8))
		}
		commit(t, w, &b)
		closeW(t, w)
	}
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	_, err = OpenReader(path, ReaderOptions{})
	if !errors.Is(err, ErrFault) {
		t.Errorf("open half way through a paused copy: %v, want ErrFault", err)
	}
	if _, err := f.Write(data[len(data)/2:]); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatalf("after the copy: %v", err)
	}
	r.Close()
}
