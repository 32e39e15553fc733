package store

import (
	"errors"
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

// TestLongReaderAndCommitDoNotStopReaders: with a long read under way (a
// check, an export) and a commit waiting for it, a new reader once waited
// at the gate until its own timeout and failed (serve answered errors for
// as long as the long read lasted). The gate is advice to readers: past a
// short wait they go on to the index's lock, which the waiting commit does
// not hold.
func TestLongReaderAndCommitDoNotStopReaders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock here")
	}
	path, _ := bigIndex(t)
	w, err := OpenWriter(path, testID, WriterOptions{NoSync: true, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer closeW(t, w)
	long, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	viewDone := make(chan error, 1)
	go func() {
		viewDone <- long.View(func(s *Snapshot) error { <-release; return nil })
	}()
	time.Sleep(100 * time.Millisecond) // the long read is inside
	commitDone := make(chan error, 1)
	go func() {
		var b Batch
		b.Put("/photos/late.jpg", File{Hash: hashOf("late")}, vec(4242, 8))
		commitDone <- w.Commit(&b)
	}()
	time.Sleep(300 * time.Millisecond) // the commit waits, holding the gate
	r, err := OpenReader(path, ReaderOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Errorf("a new reader beside a long one and a waiting commit: %v", err)
	} else {
		r.Close()
	}
	close(release)
	if err := errors.Join(<-viewDone, long.Close()); err != nil {
		t.Fatal(err)
	}
	if err := <-commitDone; err != nil {
		t.Errorf("the commit after the long read: %v", err)
	}
}
