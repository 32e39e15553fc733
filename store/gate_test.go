package store

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCommitNotStarvedByReaders: readers whose reads overlap without a gap
// (a busy serve) held a commit off until its timeout: flock is not fair,
// and the commit only polled for the exclusive lock. With the gate, new
// readers wait while a commit does, and the commit goes through.
func TestCommitNotStarvedByReaders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock here: readers never hold a commit off")
	}
	path, _ := bigIndex(t)
	w, err := OpenWriter(path, testID, WriterOptions{NoSync: true, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer closeW(t, w)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r, err := OpenReader(path, ReaderOptions{Timeout: 10 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				r.View(func(s *Snapshot) error {
					time.Sleep(30 * time.Millisecond)
					return nil
				})
				r.Close()
				reads.Add(1)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the readers overlap
	var b Batch
	b.Put("/photos/new.jpg", File{Hash: hashOf("new")}, vec(7777, 8))
	err = w.Commit(&b)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("commit beside %d overlapping reads: %v", reads.Load(), err)
	}
}
