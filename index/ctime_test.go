package index

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/ctime"
	"github.com/clipidx/clipidx/store"
)

// needCtime skips where the walk reads no status change time.
func needCtime(t *testing.T) {
	t.Helper()
	fi, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ctime.Of(fi) == 0 {
		t.Skipf("no status change time on %s: size and mtime alone say a file changed", runtime.GOOS)
	}
}

// nextTick waits out the clock tick of the last change: a kernel without
// fine-grained timestamps (Linux before 6.13) gives every change within
// one tick (1–10 ms) the same ctime.
func nextTick() { time.Sleep(25 * time.Millisecond) }

// putTimes gives path the modification time mt back, as exiftool -P and
// copies that keep dates do.
func putTimes(t *testing.T, path string, mt time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

// TestCtimeSeesRewrites: files whose size and mtime stay while their bytes
// change are read again, by their ctime: two photos of one size and one
// mtime swapped by name (each must keep its own vector, from the index,
// without the model), one rewritten in place with its mtime put back (a
// date fixed with exiftool -P). A chmod moves the ctime too, and costs a
// read, not a model pass. Before the ctime, the build said "unchanged"
// and each path kept the other's vector.
func TestCtimeSeesRewrites(t *testing.T) {
	needCtime(t)
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	a, b := filepath.Join(d, "a.png"), filepath.Join(d, "b.png")
	mt := time.Date(2021, 6, 1, 12, 0, 0, 0, time.UTC)
	write(t, a, png+"aaaa")
	write(t, b, png+"bbbb")
	putTimes(t, a, mt)
	putTimes(t, b, mt)
	e := &fakeEnc{}
	build := func(want string) {
		t.Helper()
		sum, err := Build(context.Background(), db, []string{d}, opts(e))
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("summary %s, want %s", got, want)
		}
	}
	build("added=2 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	build("added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")

	tmp := filepath.Join(d, "tmp")
	nextTick()
	rename(t, a, tmp)
	rename(t, b, a)
	rename(t, tmp, b)
	calls := e.calls.Load()
	build("added=0 updated=0 unchanged=0 reused=2 removed=0 failed=0")
	if e.calls.Load() != calls {
		t.Errorf("swapped files ran the model (%d calls)", e.calls.Load()-calls)
	}
	verify(t, db)

	nextTick()
	write(t, a, png+"cccc") // same size
	putTimes(t, a, mt)
	build("added=0 updated=1 unchanged=1 reused=0 removed=0 failed=0")
	verify(t, db)

	nextTick()
	if err := os.Chmod(b, 0o600); err != nil {
		t.Fatal(err)
	}
	calls = e.calls.Load()
	build("added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	if e.calls.Load() != calls {
		t.Errorf("a chmod ran the model (%d calls)", e.calls.Load()-calls)
	}
}

// TestCtimeStampsOlderIndex: an index whose records have no ctime (an
// older clipidx wrote them) takes each file's at the next build, without
// reading the files, and sees a rewrite with its mtime put back after
// that.
func TestCtimeStampsOlderIndex(t *testing.T) {
	needCtime(t)
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	a, b := filepath.Join(d, "a.png"), filepath.Join(d, "b.png")
	olderIndex(t, db, map[string][]byte{a: []byte(png + "aaaa"), b: []byte(png + "bbbb")}, false)
	e := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{d}, opts(e))
	if err != nil || e.calls.Load() != 0 || sum.Unchanged != 2 {
		t.Fatalf("first build on the older index: %s, %d model calls, %v", sumOf(sum), e.calls.Load(), err)
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.View(func(s *store.Snapshot) error {
		return s.Files(d, func(p string, f store.File) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if f.CtimeNs == 0 || f.CtimeNs != ctime.Of(fi) {
				t.Errorf("%s: recorded ctime %d, the file's is %d", p, f.CtimeNs, ctime.Of(fi))
			}
			return nil
		})
	})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	nextTick()
	write(t, a, png+"cccc")
	putTimes(t, a, fi.ModTime())
	sum, err = Build(context.Background(), db, []string{d}, opts(e))
	if err != nil || sum.Updated != 1 || sum.Unchanged != 1 {
		t.Fatalf("build after a rewrite with the mtime put back: %s, %v", sumOf(sum), err)
	}
	verify(t, db)
}

// TestCtimeVideo: a video rewritten with its size and mtime put back is
// sampled again.
func TestCtimeVideo(t *testing.T) {
	needCtime(t)
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	v := filepath.Join(dir, "v.mp4")
	write(t, v, "FAKEVIDEO 0,4 one")
	fi, err := os.Stat(v)
	if err != nil {
		t.Fatal(err)
	}
	e, s := &fakeEnc{}, &fakeSampler{}
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s)); err != nil {
		t.Fatal(err)
	}
	nextTick()
	write(t, v, "FAKEVIDEO 0,5 two") // same size
	putTimes(t, v, fi.ModTime())
	sum, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s))
	if err != nil || sum.Updated != 1 || s.calls.Load() != 2 {
		t.Fatalf("build after a rewrite with the mtime put back: %s, %d samplings, %v", sumOf(sum), s.calls.Load(), err)
	}
	wantRecords(t, db, dir, "v.mp4#t=0", "v.mp4#t=5")
}
