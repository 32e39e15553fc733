package export

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/flock"
	"github.com/clipidx/clipidx/store"
)

// faissInto runs FaissFlat on the index db.
func faissInto(t *testing.T, db, out string) (*Result, error) {
	t.Helper()
	var res *Result
	var err error
	view(t, db, func(s *store.Snapshot) error {
		res, err = FaissFlat(context.Background(), s, out, Options{NoSync: true})
		return nil
	})
	return res, err
}

// TestFaissTempNotTakenBeforeHeld: a second FaissFlat into the same file
// that starts between the first's creation of its temporary file and its
// lock on it is refused with ErrBusy and touches nothing; it took that
// file for a killed export's, removed it and wrote its own, and the first
// then failed.
func TestFaissTempNotTakenBeforeHeld(t *testing.T) {
	if !flock.Supported {
		t.Skip("no flock on this system: two exports into one output are not told apart")
	}
	db := synthetic(t, 40)
	out := filepath.Join(t.TempDir(), "ix", "photos.index")
	defer func(w time.Duration) { folderWait = w }(folderWait)
	folderWait = 50 * time.Millisecond
	defer func() { tempCreated = nil }()
	var second error
	var before, after []string
	once := false
	tempCreated = func(string) {
		if once {
			return
		}
		once = true
		dir := filepath.Dir(out)
		before = tree(t, dir)
		_, second = faissInto(t, db, out)
		after = tree(t, dir)
	}
	res, err := faissInto(t, db, out)
	if !once {
		t.Fatal("the hook never ran")
	}
	if !errors.Is(second, ErrBusy) {
		t.Errorf("second export while the first's file is not yet held: %v, want ErrBusy", second)
	}
	if !slices.Equal(before, after) {
		t.Errorf("the second export changed the folder: %q, was %q", after, before)
	}
	if err != nil || res.Rows != 40 {
		t.Fatalf("first export: %+v, %v; want its 40 rows", res, err)
	}
	if got := tree(t, filepath.Dir(out)); !slices.Equal(got, []string{"photos.index", "photos.index.paths"}) {
		t.Errorf("the folder holds %q, want the two files", got)
	}
}

// TestFaissExportsRacing: two FaissFlat into one file started together:
// one writes it, the other is refused (ErrBusy while the first writes,
// ErrExists once it is there), whatever the timing.
func TestFaissExportsRacing(t *testing.T) {
	if !flock.Supported {
		t.Skip("no flock on this system: two exports into one output are not told apart")
	}
	db := synthetic(t, 200)
	for i := range 50 {
		out := filepath.Join(t.TempDir(), "photos.index")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k := range errs {
			wg.Add(1)
			go func() { // no t.Fatal off the test's goroutine: errors are kept
				defer wg.Done()
				r, err := store.OpenReader(db, store.ReaderOptions{})
				if err != nil {
					errs[k] = err
					return
				}
				defer r.Close()
				errs[k] = r.View(func(s *store.Snapshot) error {
					_, err := FaissFlat(context.Background(), s, out, Options{NoSync: true})
					return err
				})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrBusy) && !errors.Is(err, ErrExists):
				t.Errorf("attempt %d: %v, want ErrBusy or ErrExists", i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("attempt %d: %d exports succeeded (%v), want 1", i, ok, errs)
		}
		if got := tree(t, filepath.Dir(out)); !slices.Equal(got, []string{"photos.index", "photos.index.paths"}) {
			t.Fatalf("attempt %d: the folder holds %q, want the two files", i, got)
		}
	}
}
