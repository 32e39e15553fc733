package index

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// recordPaths lists the paths the index holds, sorted.
func recordPaths(t *testing.T, db string) []string {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	err = r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, _ store.File) error { out = append(out, p); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A build limited to some paths (what a watcher asks after events) adds,
// changes and removes within them only: a deletion elsewhere waits for a
// build that looks there, and a full build after it finds nothing to do.
func TestBuildWithin(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	photos(t, filepath.Join(d, "a"), "a", 2)
	photos(t, filepath.Join(d, "b"), "b", 2)
	photos(t, filepath.Join(d, "c"), "c", 2)
	enc := &fakeEnc{}
	if _, err := Build(context.Background(), db, []string{d}, opts(enc)); err != nil {
		t.Fatal(err)
	}
	photos(t, filepath.Join(d, "a"), "new", 1)
	write(t, filepath.Join(d, "a", "a0.png"), png+"a0 changed")
	removeAll(t, filepath.Join(d, "b", "b0.png"))
	removeAll(t, filepath.Join(d, "c"))
	write(t, filepath.Join(d, "a", ".partial.png"), png+"an upload in progress")

	o := opts(enc)
	o.Within = []string{filepath.Join(d, "a", "new0.png"), filepath.Join(d, "a", "a0.png"), filepath.Join(d, "c"), filepath.Join(d, "a", ".partial.png")}
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=1 updated=1 unchanged=0 reused=0 removed=2 failed=0"; got != want {
		t.Errorf("partial build: %s, want %s", got, want)
	}
	paths := recordPaths(t, db)
	if !slices.Contains(paths, filepath.Join(d, "b", "b0.png")) {
		t.Errorf("b/b0.png, outside the partial build, was removed: %v", paths)
	}
	if slices.Contains(paths, filepath.Join(d, "a", ".partial.png")) {
		t.Errorf("a hidden file given to a partial build was indexed")
	}
	// The last build records what it was limited to, so that status can
	// tell a watcher's partial builds from a build of the roots.
	lastWithin := func() []string {
		t.Helper()
		r, err := store.OpenReader(db, store.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var within []string
		r.View(func(s *store.Snapshot) error {
			st, err := s.Stats()
			if err == nil && st.LastBuild != nil {
				within = st.LastBuild.Within
			}
			return err
		})
		return within
	}
	if w := lastWithin(); len(w) != 3 || !slices.Contains(w, filepath.Join(d, "c")) {
		t.Errorf("the partial build recorded within %v, want its 3 paths (the hidden one left out)", w)
	}
	// The folder of the deleted file: now it goes.
	o.Within = []string{filepath.Join(d, "b")}
	if sum, err = Build(context.Background(), db, []string{d}, o); err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=0 updated=0 unchanged=1 reused=0 removed=1 failed=0"; got != want {
		t.Errorf("partial build of b: %s, want %s", got, want)
	}
	// A full build agrees: nothing left to do.
	before := enc.images.Load()
	if sum, err = Build(context.Background(), db, []string{d}, opts(enc)); err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=0 updated=0 unchanged=4 reused=0 removed=0 failed=0"; got != want {
		t.Errorf("full build after the partial ones: %s, want %s", got, want)
	}
	if enc.images.Load() != before {
		t.Errorf("the full build ran the model on %d images", enc.images.Load()-before)
	}
	if w := lastWithin(); w != nil {
		t.Errorf("the full build recorded within %v, want none", w)
	}
	verify(t, db)

	o.Within = []string{filepath.Join(t.TempDir(), "x.png")}
	if _, err := Build(context.Background(), db, []string{d}, o); err == nil || !strings.Contains(err.Error(), "not under") {
		t.Errorf("a path outside the roots: %v, want an error", err)
	}
}

// A root given to a partial build that no longer exists is away, as in a
// full build: its records are kept offline.
func TestBuildWithinRootAway(t *testing.T) {
	base := t.TempDir()
	d := filepath.Join(base, "disk")
	db := filepath.Join(t.TempDir(), "i.db")
	photos(t, d, "p", 3)
	enc := &fakeEnc{}
	if _, err := Build(context.Background(), db, []string{d}, opts(enc)); err != nil {
		t.Fatal(err)
	}
	rename(t, d, filepath.Join(base, "elsewhere"))
	o := opts(enc)
	o.Within = []string{d}
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "root gone", sum, d, 3, "no longer exists")
}

// The build records its progress in the index with each commit, naming
// its process, and "done" at the end.
func TestBuildRecordsProgress(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	photos(t, d, "p", 12)
	o := opts(&fakeEnc{})
	o.Command = "test build"
	var seen []store.Progress
	o.committed = func(int) {
		seen = append(seen, *progressOf(t, db))
	}
	if _, err := Build(context.Background(), db, []string{d}, o); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("%d commits seen, want several (CommitEvery 5, 12 files)", len(seen))
	}
	first := seen[0]
	if first.Phase != "index" || first.Total != 12 || first.Found != 12 || first.Done == 0 || first.Done == 12 || first.Root != d {
		t.Errorf("progress at the first commit: %+v, want index, 12 found and to do, some done, root %s", first, d)
	}
	if first.Holder.PID != os.Getpid() || first.Holder.Command != "test build" || !first.Running() {
		t.Errorf("progress holder %+v (running %v), want this process, running", first.Holder, first.Running())
	}
	if h, ok := store.BuildHolder(db); ok {
		t.Errorf("after the build, the lock file still names %v", h)
	}
	last := progressOf(t, db)
	if last.Phase != "done" || last.Done != 12 || last.Running() {
		t.Errorf("progress after the build: %+v, want done 12, not running", last)
	}
}

func progressOf(t *testing.T, db string) *store.Progress {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p *store.Progress
	if err := r.View(func(s *store.Snapshot) error { p, err = s.Progress(); return err }); err != nil {
		t.Fatal(err)
	}
	if p == nil {
		t.Fatal("no progress recorded")
	}
	return p
}

// A build that finds another holding the index names it, and with
// LockWait waits for it instead of failing.
func TestBuildWaitsForAnotherBuild(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	photos(t, d, "p", 2)
	held, err := store.OpenWriter(db, fakeID, store.WriterOptions{Command: "clipidx watch /photos"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), db, []string{d}, opts(&fakeEnc{}))
	if !errors.Is(err, store.ErrBuildRunning) || !strings.Contains(err.Error(), "clipidx watch /photos") {
		t.Errorf("build while another holds the index: %v, want ErrBuildRunning naming the holder", err)
	}
	told := make(chan error, 1)
	o := opts(&fakeEnc{})
	o.LockWait = func(err error) { told <- err }
	type res struct {
		sum *Summary
		err error
	}
	done := make(chan res, 1)
	go func() { s, err := Build(context.Background(), db, []string{d}, o); done <- res{s, err} }()
	if err := <-told; !strings.Contains(err.Error(), "clipidx watch /photos") {
		t.Errorf("LockWait told %v, want the holder named", err)
	}
	held.Close()
	r := <-done
	if r.err != nil || r.sum.Added != 2 {
		t.Fatalf("the waiting build: %v, %+v", r.err, r.sum)
	}
}

// queuedOf is how many vectors no file uses the index keeps.
func queuedOf(t *testing.T, db string) int {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var st store.Stats
	if err := r.View(func(s *store.Snapshot) (err error) { st, err = s.Stats(); return err }); err != nil {
		t.Fatal(err)
	}
	return st.Queued
}

// TestBuildKeepsMovedVectors: a photo moved to another folder, the old
// place built first and the new one after (a watcher's builds of what
// settled, or each folder built on its own), is not embedded again: the
// build that removes it keeps its vector (store.KeepUnused), out of searches,
// and the build that finds it under its new name reuses it. A build of
// every indexed folder frees what no file uses.
func TestBuildKeepsMovedVectors(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	photos(t, a, "a", 2)
	photos(t, b, "b", 1)
	enc := &fakeEnc{}
	build := func(roots, within []string, want string) {
		t.Helper()
		o := opts(enc)
		o.Within = within
		before := enc.images.Load()
		sum, err := Build(context.Background(), db, roots, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("build %v within %v: %s, want %s", roots, within, got, want)
		}
		if sum.Added+sum.Updated == 0 && enc.images.Load() != before {
			t.Errorf("build %v within %v ran the model on %d images, want none", roots, within, enc.images.Load()-before)
		}
		verify(t, db)
	}
	build([]string{d}, nil, "added=3 updated=0 unchanged=0 reused=0 removed=0 failed=0")

	// A watcher's builds: the old name settles first.
	rename(t, filepath.Join(a, "a0.png"), filepath.Join(b, "moved.png"))
	build([]string{d}, []string{filepath.Join(a, "a0.png")}, "added=0 updated=0 unchanged=0 reused=0 removed=1 failed=0")
	if n := queuedOf(t, db); n != 1 {
		t.Errorf("%d vectors kept after the old name's build, want 1", n)
	}
	build([]string{d}, []string{filepath.Join(b, "moved.png")}, "added=0 updated=0 unchanged=0 reused=1 removed=0 failed=0")

	// Each folder built as a root of its own.
	rename(t, filepath.Join(b, "moved.png"), filepath.Join(a, "back.png"))
	build([]string{b}, nil, "added=0 updated=0 unchanged=1 reused=0 removed=1 failed=0")
	build([]string{a}, nil, "added=0 updated=0 unchanged=1 reused=1 removed=0 failed=0")
	if n := queuedOf(t, db); n != 0 {
		t.Errorf("%d vectors kept with every file in place, want 0", n)
	}

	// Gone for good: kept by a build of one folder, freed by a build of
	// every indexed one.
	removeAll(t, filepath.Join(a, "back.png"))
	build([]string{a}, nil, "added=0 updated=0 unchanged=1 reused=0 removed=1 failed=0")
	if n := queuedOf(t, db); n != 1 {
		t.Errorf("%d vectors kept after a build of one folder, want 1", n)
	}
	build([]string{d}, nil, "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	if n := queuedOf(t, db); n != 0 {
		t.Errorf("%d vectors kept after a build of every folder, want 0", n)
	}
}

// TestBuildKeepsRootsItsWalkSkips: a folder or shard indexed as a root of
// its own that a build of a folder around it never enters (a hidden
// folder; a tar shard, which a walk reads only as a root) keeps its
// records through that build, and their vectors: building it again runs
// no model. Such a build is no build of every indexed folder, so the
// vectors no file uses stay kept too.
func TestBuildKeepsRootsItsWalkSkips(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	hidden, shards := filepath.Join(d, ".trip"), filepath.Join(d, "shards")
	photos(t, hidden, "t", 2)
	photos(t, d, "p", 2)
	os.MkdirAll(shards, 0o755)
	shard := img2datasetShard(t, shards, 0, 3, -1)
	enc := &fakeEnc{}
	build := func(root, want string) {
		t.Helper()
		sum, err := Build(context.Background(), db, []string{root}, opts(enc))
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("build %s: %s, want %s", root, got, want)
		}
		if err := store.Check(db); err != nil {
			t.Fatal(err)
		}
	}
	build(hidden, "added=2 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	build(shard, "added=3 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	removeAll(t, filepath.Join(d, "p1.png"))
	build(d, "added=1 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	write(t, filepath.Join(d, "p0.png"), png+"p0 changed")
	build(d, "added=0 updated=1 unchanged=0 reused=0 removed=0 failed=0")
	if n := queuedOf(t, db); n != 1 {
		t.Errorf("%d vectors kept after a build that skips indexed roots, want 1 (p0's old content)", n)
	}
	paths := recordPaths(t, db)
	for _, p := range []string{filepath.Join(hidden, "t0.png"), filepath.Join(hidden, "t1.png"), shard + SampleSep + "000000000"} {
		if !slices.Contains(paths, p) {
			t.Errorf("%s lost by the build of %s: %v", p, d, paths)
		}
	}
	passes := enc.calls.Load()
	build(hidden, "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	build(shard, "added=0 updated=0 unchanged=3 reused=0 removed=0 failed=0")
	if n := enc.calls.Load() - passes; n != 0 {
		t.Errorf("%d model passes rebuilding the skipped roots, want none", n)
	}
}

// TestBuildNestedRootsTogether: a hidden folder and a shard indexed as
// roots of their own, built together with the folder around them, are
// looked at whole: what left them is removed (before, they counted as
// skipped, and a shard's new stat, recorded, hid its lost samples for
// good). A partial build of a path in the hidden root looks at it.
func TestBuildNestedRootsTogether(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	hidden := filepath.Join(d, ".trip")
	photos(t, hidden, "t", 2)
	photos(t, d, "p", 1)
	shard := img2datasetShard(t, d, 0, 3, -1)
	enc := &fakeEnc{}
	build := func(roots []string, within []string, want string) {
		t.Helper()
		o := opts(enc)
		o.Within = within
		sum, err := Build(context.Background(), db, roots, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("build %v within %v: %s, want %s", roots, within, got, want)
		}
		if err := store.Check(db); err != nil {
			t.Fatal(err)
		}
	}
	build([]string{hidden}, nil, "added=2 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	build([]string{shard}, nil, "added=3 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	build([]string{d}, nil, "added=1 updated=0 unchanged=0 reused=0 removed=0 failed=0")

	removeAll(t, filepath.Join(hidden, "t1.png"))
	img2datasetShard(t, d, 0, 1, -1) // the same shard, now with one sample
	all := []string{d, hidden, shard}
	build(all, nil, "added=0 updated=0 unchanged=3 reused=0 removed=3 failed=0")
	paths := recordPaths(t, db)
	for _, p := range []string{filepath.Join(hidden, "t1.png"), shard + SampleSep + "000000001", shard + SampleSep + "000000002"} {
		if slices.Contains(paths, p) {
			t.Errorf("%s kept after a build of every root: %v", p, paths)
		}
	}

	photos(t, hidden, "n", 1)
	build(all, []string{filepath.Join(hidden, "n0.png")}, "added=1 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	// A partial build of the folder around them (a watcher's, after an
	// event there) does not look at them: it keeps them.
	build(all, []string{d}, "added=0 updated=0 unchanged=1 reused=0 removed=0 failed=0")
	paths = recordPaths(t, db)
	for _, p := range []string{filepath.Join(hidden, "t0.png"), filepath.Join(hidden, "n0.png"), shard + SampleSep + "000000000"} {
		if !slices.Contains(paths, p) {
			t.Errorf("%s lost by a partial build of %s: %v", p, d, paths)
		}
	}
}

// TestWalkRoots: of the roots an index holds, a build of them all walks
// the outermost and those their walk skips.
func TestWalkRoots(t *testing.T) {
	f := filepath.FromSlash
	in := []string{f("/a"), f("/a/.h"), f("/a/.h/x"), f("/a/b"), f("/a/b/.c/d"), f("/a/s.tar"), f("/b"), f("/b.tar")}
	want := []string{f("/a"), f("/a/.h"), f("/a/b/.c/d"), f("/a/s.tar"), f("/b"), f("/b.tar")}
	if got := WalkRoots(in); !slices.Equal(got, want) {
		t.Errorf("WalkRoots(%q) = %q, want %q", in, got, want)
	}
}

// TestBuildPrefersRealPathOverLink: a folder reached by its own path and
// through a link (in the same root, the link's name first; or a link in
// one root to a folder of another) is indexed once, by its own path.
func TestBuildPrefersRealPathOverLink(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	root, other := filepath.Join(d, "root"), filepath.Join(d, "z_other")
	photos(t, filepath.Join(root, "real"), "r", 2)
	symlink(t, "real", filepath.Join(root, "a_link"))
	photos(t, filepath.Join(other, "trip"), "o", 1)
	symlink(t, filepath.Join(other, "trip"), filepath.Join(root, "b_trip"))
	sum, err := Build(context.Background(), db, []string{root, other}, opts(&fakeEnc{}))
	if err != nil || sum.Added != 3 {
		t.Fatalf("build: %v, %v; want 3 added", sum, err)
	}
	want := []string{filepath.Join(root, "real", "r0.png"), filepath.Join(root, "real", "r1.png"), filepath.Join(other, "trip", "o0.png")}
	if got := recordPaths(t, db); !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
	// Walk agrees.
	got, err := Walk(context.Background(), []string{root, other})
	slices.Sort(got)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk: %q, %v; want %q", got, err, want)
	}
}

// TestBuildKeepsAwayRecordsMadeThroughLink: records an earlier build made
// through a link (here, the real folder was outside the root then) move to
// the real path when the walk finds it, but those under a disk away at
// that build are kept, offline by the link's path, not removed.
func TestBuildKeepsAwayRecordsMadeThroughLink(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	root, outside, ext := filepath.Join(d, "r"), filepath.Join(d, "outside"), filepath.Join(d, "ext")
	photos(t, filepath.Join(outside, "real"), "x", 1)
	photos(t, filepath.Join(ext, "disk"), "c", 2)
	if err := os.MkdirAll(filepath.Join(outside, "real", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(ext, "disk"), filepath.Join(outside, "real", "sub", "disklink"))
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(outside, "real"), filepath.Join(root, "a"))
	enc := &fakeEnc{}
	if sum, err := Build(context.Background(), db, []string{root}, opts(enc)); err != nil || sum.Added != 3 {
		t.Fatalf("first build: %v, %v; want 3 added", sum, err)
	}
	// The real folder moves into the root, the link follows it; the disk
	// is unplugged.
	rename(t, filepath.Join(outside, "real"), filepath.Join(root, "real"))
	removeAll(t, filepath.Join(root, "a"))
	symlink(t, "real", filepath.Join(root, "a"))
	rename(t, filepath.Join(ext, "disk"), filepath.Join(ext, "unplugged"))
	sum, err := Build(context.Background(), db, []string{root}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a", "sub", "disklink", "c0.png"), filepath.Join(root, "a", "sub", "disklink", "c1.png"), filepath.Join(root, "real", "x0.png")}
	if got := recordPaths(t, db); !slices.Equal(got, want) || sum.Reused != 1 || sum.Removed != 1 {
		t.Errorf("after the move with the disk away: %s, records %q; want x0 reused at its real path and %q", sumOf(sum), got, want)
	}
	if !slices.ContainsFunc(sum.Offline, func(o store.Offline) bool {
		return o.Dir == filepath.Join(root, "a", "sub", "disklink") && o.Entries == 2
	}) {
		t.Errorf("offline %+v, want the link's path of the disk with its 2 entries (%s, %q)", sum.Offline, sumOf(sum), recordPaths(t, db))
	}
}
