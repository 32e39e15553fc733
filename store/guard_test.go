//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardFaults: the chunks of a snapshot whose file is cut short under
// it (a backup copied onto the index with cp) fault when read. Read by
// store, that is ErrFault (and ErrCorrupt), on View's goroutine and, with
// Guard, on one of the caller's own (search's scan workers: a fault there
// was fatal). Read by the caller's own code it propagates: no sign of
// damage that store could vouch for.
func TestGuardFaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	for i := range 40 {
		b.Put(fmt.Sprintf("/p/f%d.jpg", i), File{Hash: hashOf(fmt.Sprint(i))}, vec(uint64(i), testID.Dim))
	}
	commit(t, w, &b)
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var onGoroutine, callers error
	var callersPanic any
	err = r.View(func(s *Snapshot) error {
		chunks, err := s.Chunks()
		if err != nil || len(chunks) == 0 {
			t.Fatalf("chunks: %d, %v", len(chunks), err)
		}
		// Only the two meta pages stay: every chunk lies past them.
		if err := os.Truncate(path, 2*int64(os.Getpagesize())); err != nil {
			t.Skipf("cannot cut a mapped file here: %v", err)
		}
		done := make(chan error)
		go func() { done <- Guard(func() error { chunks[0].LiveCount(); return nil }) }()
		onGoroutine = <-done
		callers = func() error {
			defer func() { callersPanic = recover() }()
			return Guard(func() error { readByte = chunks[0].Hi[0]; return nil })
		}()
		chunks[0].LiveCount() // on View's goroutine
		return nil
	})
	for _, tc := range []struct {
		name string
		err  error
	}{{"Guard on a goroutine of its own", onGoroutine}, {"View", err}} {
		if !errors.Is(tc.err, ErrFault) || !errors.Is(tc.err, ErrCorrupt) || !strings.Contains(fmt.Sprint(tc.err), "store.Chunk.LiveCount") {
			t.Errorf("%s: %v; want ErrFault and ErrCorrupt, naming store.Chunk.LiveCount", tc.name, tc.err)
		}
	}
	if !isFault(callersPanic) || callers != nil {
		t.Errorf("a fault in the caller's own code: recovered %v, returned %v; want the fault to propagate", callersPanic, callers)
	}
}

// readByte keeps a read of the test's own from being left out.
var readByte byte
