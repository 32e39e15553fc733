package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// gatedPre is fakePre that blocks on files whose content contains "SLOW"
// until release is closed, and counts its calls.
type gatedPre struct {
	release chan struct{}
	once    sync.Once
	calls   atomic.Int64
}

func newGatedPre() *gatedPre { return &gatedPre{release: make(chan struct{})} }

func (g *gatedPre) open() { g.once.Do(func() { close(g.release) }) }

// isOpen reports whether open was called.
func (g *gatedPre) isOpen() bool {
	select {
	case <-g.release:
		return true
	default:
		return false
	}
}

func (g *gatedPre) pre(data []byte, path string) ([]float32, error) {
	g.calls.Add(1)
	if strings.Contains(string(data), "SLOW") {
		<-g.release
	}
	return fakePre(data, path)
}

// images reads the image counter of the index.
func images(db string) (int, error) {
	r, err := store.OpenReader(db, store.ReaderOptions{Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	n := 0
	err = r.View(func(s *store.Snapshot) error { st, err := s.Stats(); n = st.Images; return err })
	return n, errors.Join(err, r.Close())
}

// duplicateTree indexes a.png, then adds a file whose decode blocks (sorted
// first), one more new image and n copies of a.png.
func duplicateTree(t *testing.T, n int) (dir, db string) {
	t.Helper()
	dir, db = t.TempDir(), filepath.Join(t.TempDir(), "i.db")
	write(t, filepath.Join(dir, "a.png"), png+"a")
	if _, err := Build(context.Background(), db, []string{dir}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "0slow.png"), png+"SLOW")
	write(t, filepath.Join(dir, "1new.png"), png+"new")
	for i := range n {
		write(t, filepath.Join(dir, fmt.Sprintf("c%02d.png", i)), png+"a")
	}
	return dir, db
}

// TestBuildCommitsWhileAnEmbedWaits: a file that takes long to decode must
// hold back neither the reused copies behind it nor a partial pass of new
// images, which are committed within CommitInterval.
func TestBuildCommitsWhileAnEmbedWaits(t *testing.T) {
	const n = 30
	dir, db := duplicateTree(t, n)
	g := newGatedPre()
	defer g.open()
	o := opts(&fakeEnc{})
	o.Preprocess, o.Workers, o.BatchSize, o.CommitInterval = g.pre, 2, 8, 20*time.Millisecond
	// Everything but the blocked file must reach the index while it waits:
	// after each commit, look; once all is there, let the decode go on.
	want := 1 + n + 1
	var got []int
	o.committed = func(int) {
		if g.isOpen() {
			return
		}
		img, err := images(db)
		if err != nil {
			t.Errorf("read the index during the build: %v", err)
		}
		got = append(got, img)
		if img >= want {
			g.open()
		}
	}
	// The commits that bring the rest in are due to CommitInterval; this
	// bound is only reached when they never come.
	stopper := time.AfterFunc(time.Minute, g.open)
	defer stopper.Stop()
	sum, err := Build(context.Background(), db, []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("while one decode blocked, the index held %v images after each commit, want %d in the end", got, want)
	}
	if s := sumOf(sum); s != "added=2 updated=0 unchanged=1 reused=30 removed=0 failed=0" {
		t.Errorf("summary %s", s)
	}
	if img, _ := verify(t, db); img != want+1 {
		t.Errorf("index holds %d images, want %d", img, want+1)
	}
}

// TestBuildCancelKeepsFinishedWork cancels while the first file's decode
// blocks: every finished result (the reused copies) must be committed.
func TestBuildCancelKeepsFinishedWork(t *testing.T) {
	const n = 30
	dir, db := duplicateTree(t, n)
	g := newGatedPre()
	defer g.open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := opts(&fakeEnc{})
	o.Preprocess, o.Workers, o.BatchSize, o.CommitEvery = g.pre, 2, 8, 1000
	o.CommitInterval = time.Hour
	o.Progress = func(e Event) {
		if e.Phase == "index" && e.Done == n {
			cancel()
		}
	}
	// Fallback for a pipeline that never reports n files: cancel anyway.
	stopper := time.AfterFunc(time.Minute, func() { cancel(); g.open() })
	defer stopper.Stop()
	sum, err := Build(ctx, db, []string{dir}, o)
	g.open()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if sum.Reused != n {
		t.Errorf("summary %s, want %d reused", sumOf(sum), n)
	}
	if img, _ := verify(t, db); img < 1+n {
		t.Errorf("after the cancel the index holds %d images, want at least %d (a.png and its copies)", img, 1+n)
	}
}

// TestBuildDecodesDuplicateContentOnce: copies of new content found in one
// build cost a hash each, not a decode; the others reuse the first's vector.
func TestBuildDecodesDuplicateContentOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		sum     string
	}{
		{"image", png + "same", "added=1 updated=0 unchanged=0 reused=9 removed=0 failed=0"},
		{"corrupt", png + "CORRUPT", "added=0 updated=0 unchanged=0 reused=0 removed=0 failed=10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "i.db")
			for i := range 10 {
				write(t, filepath.Join(dir, fmt.Sprintf("p%02d.png", i)), tc.content)
			}
			g := newGatedPre()
			enc := &fakeEnc{}
			o := opts(enc)
			o.Preprocess, o.Workers = g.pre, 4
			sum, err := Build(context.Background(), db, []string{dir}, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := sumOf(sum); got != tc.sum {
				t.Errorf("summary %s, want %s", got, tc.sum)
			}
			if n := g.calls.Load(); n != 1 {
				t.Errorf("decoded %d times, want once", n)
			}
			if n := enc.images.Load(); n > 1 {
				t.Errorf("encoded %d images, want at most 1", n)
			}
			// Each copy's failure names it, not the file decoded (once
			// every copy's message named the first).
			recorded := failedErrs(t, db, sum.Failures)
			for _, f := range sum.Failures {
				name := filepath.Base(f.Path)
				if !strings.Contains(f.Error, name) || strings.Count(f.Error, "p0") != 1 || recorded[f.Path] != f.Error {
					t.Errorf("failure of %s: %q (recorded %q): want its own name alone", name, f.Error, recorded[f.Path])
				}
			}
			verify(t, db)
		})
	}
}

// TestBuildReindexDamagedIndex: Reindex starts over from a file that is no
// index at all and says where the damaged file went.
func TestBuildReindexDamagedIndex(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "i.db")
	write(t, filepath.Join(dir, "a.png"), png+"a")
	if _, err := Build(context.Background(), db, []string{dir}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	// Both meta pages zeroed: a damaged index (a file that is no bbolt
	// file at all is no index, and refused untouched: store's
	// TestNotABoltFile).
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 2*os.Getpagesize()), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Build(context.Background(), db, []string{dir}, opts(&fakeEnc{})); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("build on a damaged index: %v, want ErrCorrupt", err)
	}
	o := opts(&fakeEnc{})
	o.Reindex = true
	sum, err := Build(context.Background(), db, []string{dir}, o)
	if err != nil || sum.Added != 1 {
		t.Fatalf("reindex: %v, %v", sum, err)
	}
	if !strings.HasPrefix(sum.Backup, db+".corrupt-") {
		t.Errorf("Summary.Backup = %q, want %s.corrupt-TIME", sum.Backup, db)
	}
	verify(t, db)
}

// failedErrs returns the failure recorded in the index at db for each of
// failures' paths.
func failedErrs(t *testing.T, db string, failures []Failure) map[string]string {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]string{}
	err = r.View(func(s *store.Snapshot) error {
		for _, f := range failures {
			rec, ok, err := s.File(f.Path)
			if err != nil {
				return err
			}
			if ok {
				out[f.Path] = rec.Err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
