package watch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/store"
)

// The watcher's tests drive time (fakeClock) and events (fakeSource)
// through its seams over real files and the real index.Build with a fake
// model; the real-time waits are only the loop's turns, each bounded by
// turnTimeout.

const (
	dim         = 4
	settle      = 2 * time.Second
	turnTimeout = 20 * time.Second
)

var fakeID = store.Identity{Model: "fake", Dim: dim, Preprocess: "fake1"}

func fakePre(data []byte, path string) ([]float32, error) {
	if !strings.HasPrefix(string(data), "IMG") {
		return nil, fmt.Errorf("%w", index.ErrNotImage)
	}
	h := sha256.Sum256(data)
	p := make([]float32, dim)
	for i := range p {
		p[i] = float32(h[i]) + 1
	}
	return p, nil
}

// fakeEnc counts the images it embeds; a pass blocks while gate is set
// until it is closed (started is told first).
type fakeEnc struct {
	images  atomic.Int64
	gate    chan struct{}
	started chan struct{}
}

func (e *fakeEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	if e.gate != nil {
		select {
		case e.started <- struct{}{}:
		default:
		}
		<-e.gate
	}
	e.images.Add(int64(n))
	return slices.Clone(pix), nil
}

type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.c <- c.now
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

// fakeSource stands in for fsnotify: the test sends events; Add fails
// with ENOSPC after limit watches (0 = no limit), and with deny[d] for d.
// A watch is on the folder it was set on (dirs holds which), as an
// inotify watch is on an inode: another folder renamed over it is not
// watched (watchingNow).
type fakeSource struct {
	mu     sync.Mutex
	dirs   map[string]rootID
	deny   map[string]error
	limit  int
	events chan fsnotify.Event
	errs   chan error
	// onAdd, when set, runs before each Add (to change the tree under
	// the watcher's feet); Add fails, as inotify does, for a folder that
	// does not exist.
	onAdd func(d string)
}

func newSource() *fakeSource {
	return &fakeSource{dirs: map[string]rootID{}, deny: map[string]error{}, events: make(chan fsnotify.Event), errs: make(chan error)}
}

func (s *fakeSource) Add(d string) error {
	if s.onAdd != nil {
		s.onAdd(d)
	}
	if _, err := os.Stat(d); err != nil {
		return fmt.Errorf("add %s: %w", d, syscall.ENOENT)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.deny[d]; err != nil {
		return fmt.Errorf("add %s: %w", d, err)
	}
	if s.limit > 0 && len(s.dirs) >= s.limit {
		return fmt.Errorf("add %s: %w", d, syscall.ENOSPC)
	}
	s.dirs[d] = rootOf(d)
	return nil
}

func (s *fakeSource) Remove(d string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dirs, d)
	return nil
}

func (s *fakeSource) watching(d string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.dirs[d]
	return ok
}

// watchingNow reports whether the folder now at d is watched (not one
// that had its name before).
func (s *fakeSource) watchingNow(d string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.dirs[d]
	return ok && id == rootOf(d)
}

func (s *fakeSource) allow(d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deny, d)
}

func (s *fakeSource) Events() <-chan fsnotify.Event { return s.events }
func (s *fakeSource) Errors() <-chan error          { return s.errs }
func (s *fakeSource) Close() error                  { return nil }

// rig is one watcher under test.
type rig struct {
	t      *testing.T
	root   string
	db     string
	enc    *fakeEnc
	clock  *fakeClock
	src    *fakeSource
	builds chan []string // the within of each build that ended
	notes  chan Note
	cancel context.CancelFunc
	done   chan error
	opts   Options
	// more are roots besides root (a folder within it built on its own).
	more []string
	// building is set while a build runs: watcher time stands still
	// then (a build takes real time, which the fake clock does not see).
	building atomic.Bool
}

func newRig(t *testing.T, o Options, src *fakeSource) *rig {
	t.Helper()
	r := &rig{t: t, root: t.TempDir(), db: filepath.Join(t.TempDir(), "i.db"), enc: &fakeEnc{}, clock: newClock(), src: src,
		builds: make(chan []string, 100), notes: make(chan Note, 1000), done: make(chan error, 1)}
	return r.with(o)
}

func (r *rig) with(o Options) *rig {
	o.Roots = append([]string{r.root}, r.more...)
	o.Clock = r.clock
	if r.src != nil {
		o.Source = r.src
	}
	o.Settle = settle
	if o.FSType == nil {
		o.FSType = func(string) string { return "" }
	}
	o.Notify = func(n Note) {
		if n.Kind == "build" {
			r.building.Store(true) // before the build's goroutine starts
		}
		r.notes <- n
	}
	o.Build = func(ctx context.Context, within []string) error {
		defer r.building.Store(false)
		_, err := index.Build(ctx, r.db, o.Roots, index.Options{Encoder: r.enc, Preprocess: fakePre, Identity: fakeID,
			BatchSize: 1000, CommitEvery: 1000, Within: within, LockWait: func(error) {}})
		r.builds <- within
		return err
	}
	r.opts = o
	return r
}

func (r *rig) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- Run(ctx, r.opts) }()
	r.t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(turnTimeout):
			r.t.Error("Run did not return after cancel")
		}
	})
}

// nextBuild advances the clock by a quarter of settle at each turn until
// a build ends, and returns its paths and the fake time it took; it
// fails after maxFake of fake time.
func (r *rig) nextBuild(maxFake time.Duration) ([]string, time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(turnTimeout)
	var fake time.Duration
	for {
		select {
		case w := <-r.builds:
			return w, fake
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no build within %v of real time", turnTimeout)
		}
		if r.building.Load() {
			continue
		}
		if fake >= maxFake {
			r.t.Fatalf("no build within %v of watcher time", maxFake)
		}
		r.clock.Advance(settle / 4)
		fake += settle / 4
	}
}

func (r *rig) event(op fsnotify.Op, path string) {
	select {
	case r.src.events <- fsnotify.Event{Name: path, Op: op}:
	case <-time.After(turnTimeout):
		r.t.Fatal("the watcher took no event")
	}
}

func (r *rig) write(rel, content string) string {
	r.t.Helper()
	p := filepath.Join(r.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// records maps each indexed path to its content hash.
func records(t *testing.T, db string) map[string]store.Hash {
	t.Helper()
	rd, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	out := map[string]store.Hash{}
	err = rd.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error { out[p] = f.Hash; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Check(db); err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *rig) has(rel string) bool {
	_, ok := records(r.t, r.db)[filepath.Join(r.root, rel)]
	return ok
}

// maxBatchWait is the bound, in watcher time, within which a change is
// built: settle after the last event, and the turns that notice it.
const maxBatchWait = 3 * settle

// Every kind of change under a watched tree reaches the index through
// the build within the stated bound of watcher time: files added,
// changed, renamed and deleted, folders created and removed, a burst of
// 500 copies (a few batches, not 500), and a file written slowly (taken
// once, when it stops changing).
// TestWatchFolderGoneBeforeItsWatch: a folder moved away between its
// creation event and its watch (a folder moved twice in a row) is no
// error the watcher reports: its move raised events of its own. The
// files it took away leave the index by the build.
func TestWatchFolderGoneBeforeItsWatch(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{}, src)
	r.write("a/one.jpg", "IMG one")
	r.start()
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("first build within %v, want the whole roots", w)
	}
	moved := filepath.Join(r.root, "moved")
	away := filepath.Join(t.TempDir(), "away")
	src.onAdd = func(d string) {
		if d == moved {
			if err := os.Rename(moved, away); err != nil {
				t.Error(err)
			}
		}
	}
	r.write("moved/two.jpg", "IMG two")
	r.event(fsnotify.Create, moved)
	if w, _ := r.nextBuild(maxBatchWait); w == nil {
		t.Fatal("a full build, want the changed path")
	}
	for len(r.notes) > 0 {
		if n := <-r.notes; n.Kind == "error" || n.Err != nil {
			t.Errorf("the watcher said %s %s: %v", n.Kind, n.Path, n.Err)
		}
	}
	if r.has("moved/two.jpg") {
		t.Error("a file of the folder moved away is indexed")
	}
}

func TestWatchFollowsChanges(t *testing.T) {
	r := newRig(t, Options{}, newSource())
	r.write("a/one.jpg", "IMG one")
	r.write("a/two.jpg", "IMG two")
	r.start()
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("first build within %v, want the whole roots", w)
	}
	if !r.src.watching(filepath.Join(r.root, "a")) {
		t.Fatal("no watch on a/")
	}

	step := func(what string, change func()) {
		t.Helper()
		change()
		w, took := r.nextBuild(maxBatchWait)
		if w == nil {
			t.Fatalf("%s: a full build, want one of the changed paths", what)
		}
		t.Logf("%s: built %d paths after %v of watcher time", what, len(w), took)
	}

	step("add", func() { r.event(fsnotify.Create, r.write("a/three.jpg", "IMG three")) })
	if !r.has("a/three.jpg") {
		t.Error("added file not indexed")
	}
	before := records(t, r.db)[filepath.Join(r.root, "a/one.jpg")]
	step("change", func() { r.event(fsnotify.Write, r.write("a/one.jpg", "IMG one, edited")) })
	if records(t, r.db)[filepath.Join(r.root, "a/one.jpg")] == before {
		t.Error("changed file keeps its old record")
	}
	images := r.enc.images.Load()
	step("rename", func() {
		from, to := filepath.Join(r.root, "a/two.jpg"), filepath.Join(r.root, "a/deux.jpg")
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
		r.event(fsnotify.Rename, from)
		r.event(fsnotify.Create, to)
	})
	if r.has("a/two.jpg") || !r.has("a/deux.jpg") || r.enc.images.Load() != images {
		t.Errorf("rename: old %v, new %v, model runs %d; want the new name only, no model run", r.has("a/two.jpg"), r.has("a/deux.jpg"), r.enc.images.Load()-images)
	}
	step("delete", func() {
		p := filepath.Join(r.root, "a/three.jpg")
		os.Remove(p)
		r.event(fsnotify.Remove, p)
	})
	if r.has("a/three.jpg") {
		t.Error("deleted file still indexed")
	}
	step("new folder", func() {
		// Its files are written before its watch is set: the folder is
		// built whole.
		r.write("b/x/1.jpg", "IMG b1")
		r.write("b/x/2.jpg", "IMG b2")
		r.event(fsnotify.Create, filepath.Join(r.root, "b"))
	})
	if !r.has("b/x/1.jpg") || !r.has("b/x/2.jpg") || !r.src.watching(filepath.Join(r.root, "b/x")) {
		t.Error("the files of a new folder are not indexed, or its subfolder not watched")
	}
	step("folder removed", func() {
		p := filepath.Join(r.root, "b")
		os.RemoveAll(p)
		r.event(fsnotify.Remove, p)
	})
	if r.has("b/x/1.jpg") || r.src.watching(filepath.Join(r.root, "b/x")) {
		t.Error("a removed folder's files are still indexed, or still watched")
	}

	// A burst of 500 copies, events arriving over watcher time faster than
	// settle: one batch or a few.
	images = r.enc.images.Load()
	var paths []string
	for i := range 500 {
		paths = append(paths, r.write(fmt.Sprintf("burst/%03d.jpg", i), fmt.Sprintf("IMG burst %d", i)))
	}
	r.event(fsnotify.Create, filepath.Join(r.root, "burst"))
	for i, p := range paths {
		r.event(fsnotify.Write, p)
		if i%100 == 99 {
			r.clock.Advance(settle / 4)
		}
	}
	batches := 0
	for n := 0; ; {
		w, _ := r.nextBuild(maxBatchWait + 2*settle)
		batches++
		for _, p := range w {
			if p == filepath.Join(r.root, "burst") {
				n = 500
			}
		}
		if n == 500 || batches > 5 {
			break
		}
	}
	if batches > 3 {
		t.Errorf("500 copies took %d batches, want 1 to 3", batches)
	}
	if got := r.enc.images.Load() - images; got != 500 {
		t.Errorf("the model embedded %d images for 500 copies, want 500", got)
	}

	// A file written slowly: each part comes with an event and before it
	// settles; it is built once, whole.
	images = r.enc.images.Load()
	slow := filepath.Join(r.root, "a/slow.jpg")
	content := "IMG slow"
	for range 6 {
		content += " more data"
		r.write("a/slow.jpg", content)
		r.event(fsnotify.Write, slow)
		r.clock.Advance(settle / 2)
		select {
		case w := <-r.builds:
			t.Fatalf("a build of %v while the file was still being written", w)
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.nextBuild(maxBatchWait)
	got := records(t, r.db)[slow]
	if want := store.Hash(sha256.Sum256([]byte(content))); got != want {
		t.Error("the slowly written file is not indexed with its final content")
	}
	if n := r.enc.images.Load() - images; n != 1 {
		t.Errorf("the slowly written file was embedded %d times, want once", n)
	}

	// The index equals what a full build of the tree makes.
	full := filepath.Join(t.TempDir(), "full.db")
	if _, err := index.Build(context.Background(), full, []string{r.root}, index.Options{Encoder: &fakeEnc{}, Preprocess: fakePre, Identity: fakeID}); err != nil {
		t.Fatal(err)
	}
	if a, b := records(t, r.db), records(t, full); !maps.Equal(a, b) {
		t.Errorf("the watched index holds %d records, a full build %d: they differ", len(a), len(b))
	}
}

// With events off, the rescan alone reaches the same index as a full
// build, and wakes only when due.
// TestWatchHiddenRoot: a hidden folder watched as a root of its own,
// inside a root that skips it, is watched to its subfolders, and a file
// new there is indexed from its event (no rescan needed).
func TestWatchHiddenRoot(t *testing.T) {
	r := newRig(t, Options{}, newSource())
	r.more = []string{filepath.Join(r.root, ".private")}
	r.with(Options{})
	r.write(".private/sub/one.jpg", "IMG one")
	r.write("a/two.jpg", "IMG two")
	r.start()
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("first build within %v, want the whole roots", w)
	}
	if !r.has(".private/sub/one.jpg") || !r.src.watching(filepath.Join(r.root, ".private", "sub")) {
		t.Fatalf("the hidden root: indexed %v, its subfolder watched %v; want both", r.has(".private/sub/one.jpg"), r.src.watching(filepath.Join(r.root, ".private", "sub")))
	}
	r.event(fsnotify.Create, r.write(".private/sub/three.jpg", "IMG three"))
	if w, _ := r.nextBuild(maxBatchWait); w == nil || !r.has(".private/sub/three.jpg") {
		t.Errorf("a file new in the hidden root: build within %v, indexed %v; want it built from its event", w, r.has(".private/sub/three.jpg"))
	}
}

func TestWatchRescanOnly(t *testing.T) {
	r := newRig(t, Options{NoEvents: true, Rescan: 10 * time.Minute}, nil)
	r.write("a/one.jpg", "IMG one")
	r.write("a/two.jpg", "IMG two")
	r.start()
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("first build within %v, want everything", w)
	}
	r.write("a/three.jpg", "IMG three")
	os.Remove(filepath.Join(r.root, "a/one.jpg"))
	r.write("c/four.jpg", "IMG four")
	r.clock.Advance(9 * time.Minute)
	select {
	case w := <-r.builds:
		t.Fatalf("a build (%v) before the rescan was due", w)
	case <-time.After(50 * time.Millisecond):
	}
	r.clock.Advance(time.Minute)
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("rescan within %v, want everything", w)
	}
	full := filepath.Join(t.TempDir(), "full.db")
	if _, err := index.Build(context.Background(), full, []string{r.root}, index.Options{Encoder: &fakeEnc{}, Preprocess: fakePre, Identity: fakeID}); err != nil {
		t.Fatal(err)
	}
	if a, b := records(t, r.db), records(t, full); !maps.Equal(a, b) || len(a) != 3 {
		t.Errorf("rescan-only index %v, full build %v: want the same 3 records", slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
	}
}

// notesOf drains the notes told so far.
func (r *rig) notesOf(kind string) []Note {
	var out []Note
	for {
		select {
		case n := <-r.notes:
			if n.Kind == kind {
				out = append(out, n)
			}
		default:
			return out
		}
	}
}

// Lost events (the queue overflowed) bring a full build at once; a
// reached watch limit is said once, with the sysctl that raises it, and
// the rescan goes on; a network filesystem gets no watch.
func TestWatchWhereEventsCannotBeTrusted(t *testing.T) {
	src := newSource()
	src.limit = 3
	nfs := ""
	r := newRig(t, Options{Rescan: time.Hour, FSType: func(d string) string {
		if d == nfs {
			return "NFS"
		}
		return ""
	}}, src)
	nfs = filepath.Join(r.root, "share")
	for _, d := range []string{"share/x", "d1", "d2", "d3", "d4", "d5"} {
		r.write(d+"/p.jpg", "IMG "+d)
	}
	r.start()
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("first build within %v", w)
	}
	if n := r.notesOf("limit"); len(n) != 1 || !strings.Contains(n[0].Text, "sysctl fs.inotify.max_user_watches=") {
		t.Errorf("limit notes %+v, want one naming the sysctl", n)
	}
	// The notes were drained together: look again for the network one.
	if src.watching(nfs) || src.watching(filepath.Join(nfs, "x")) {
		t.Error("a folder on a network filesystem got a watch")
	}
	// Overflow: a full build follows without waiting for the rescan.
	select {
	case src.errs <- fsnotify.ErrEventOverflow:
	case <-time.After(turnTimeout):
		t.Fatal("the watcher took no error")
	}
	if w, took := r.nextBuild(maxBatchWait); w != nil || took >= time.Hour {
		t.Errorf("after an overflow: build within %v after %v, want a full build at once", w, took)
	}
	// The rescan still comes, an hour on.
	r.write("d5/new.jpg", "IMG unwatched")
	r.clock.Advance(time.Hour)
	if w, _ := r.nextBuild(maxBatchWait); w != nil || !r.has("d5/new.jpg") {
		t.Errorf("rescan within %v; the unwatched folder's new file indexed: %v", w, r.has("d5/new.jpg"))
	}
}

// The network note, on its own.
func TestWatchNetworkFilesystem(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{FSType: func(d string) string { return map[bool]string{true: "NFS"}[strings.HasSuffix(d, "share")] }}, src)
	r.write("share/p.jpg", "IMG p")
	r.write("local/p.jpg", "IMG q")
	r.start()
	r.nextBuild(maxBatchWait)
	n := r.notesOf("network")
	if len(n) != 1 || n[0].Path != filepath.Join(r.root, "share") || n[0].Text != "NFS" {
		t.Errorf("network notes %+v, want one for share/", n)
	}
	if src.watching(filepath.Join(r.root, "share")) || !src.watching(filepath.Join(r.root, "local")) {
		t.Error("want no watch on share/, one on local/")
	}
}

// Stopping mid-batch (SIGTERM cancels the context) returns after the
// build has committed what it finished: the index stays consistent and
// says the build stopped; a manual build started meanwhile waited for the
// watcher's and embedded nothing twice.
func TestWatchStopMidBatchAndManualBuild(t *testing.T) {
	r := newRig(t, Options{}, newSource())
	r.write("a/one.jpg", "IMG one")
	r.start()
	r.nextBuild(maxBatchWait)
	r.enc.gate, r.enc.started = make(chan struct{}), make(chan struct{}, 1)
	for i := range 5 {
		r.event(fsnotify.Create, r.write(fmt.Sprintf("a/n%d.jpg", i), fmt.Sprintf("IMG n%d", i)))
	}
	// Advance until the batch's model pass starts (and blocks).
	for fake := time.Duration(0); ; fake += settle / 4 {
		select {
		case <-r.enc.started:
		case <-time.After(5 * time.Millisecond):
			if fake > maxBatchWait {
				t.Fatal("the batch never reached the model")
			}
			r.clock.Advance(settle / 4)
			continue
		}
		break
	}
	// A manual build now waits for the watcher's.
	waited := make(chan error, 1)
	manual := make(chan *index.Summary, 1)
	go func() {
		s, err := index.Build(context.Background(), r.db, []string{r.root}, index.Options{Encoder: r.enc, Preprocess: fakePre, Identity: fakeID,
			LockWait: func(err error) { waited <- err }})
		if err != nil {
			t.Error(err)
		}
		manual <- s
	}()
	if err := <-waited; !errors.Is(err, store.ErrBuildRunning) {
		t.Errorf("manual build told %v, want ErrBuildRunning", err)
	}
	r.cancel() // SIGTERM
	close(r.enc.gate)
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		r.done <- nil // for Cleanup
	case <-time.After(turnTimeout):
		t.Fatal("Run did not return after cancel")
	}
	s := <-manual
	recs := records(t, r.db) // checks the index too
	if len(recs) != 6 {
		t.Errorf("%d records after the stop and the manual build, want 6", len(recs))
	}
	if total := r.enc.images.Load(); total != 6 || s.Added+s.Unchanged != 6 {
		t.Errorf("the model embedded %d images for 6 files (manual build: %+v)", total, s)
	}
}

// A root that goes away (an unmounted disk) is kept offline, not emptied;
// when it comes back, the rescan finds it whole and watches it again.
func TestWatchRootAwayAndBack(t *testing.T) {
	r, src, away := rootGone(t, Options{Rescan: time.Hour, RootPoll: -1}, "a/one.jpg", "b.jpg")
	if n := len(records(t, r.db)); n != 2 {
		t.Errorf("%d records after the root went away, want both kept (offline)", n)
	}
	if src.watching(filepath.Join(r.root, "a")) {
		t.Error("the watches of a root that went away are kept")
	}
	if err := os.Rename(away, r.root); err != nil {
		t.Fatal(err)
	}
	images := r.enc.images.Load()
	r.clock.Advance(time.Hour)
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("rescan within %v", w)
	}
	if n := len(records(t, r.db)); n != 2 || r.enc.images.Load() != images {
		t.Errorf("%d records after the root came back (model runs %d), want 2 and none", n, r.enc.images.Load()-images)
	}
	if !src.watching(filepath.Join(r.root, "a")) {
		t.Error("the root that came back has no watches again")
	}
	rd, err := store.OpenReader(r.db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.View(func(s *store.Snapshot) error {
		if off, _ := s.Offline(); len(off) != 0 {
			t.Errorf("still offline after the root came back: %+v", off)
		}
		return nil
	})
}

// A root that comes back is found within RootPoll, with no event and no
// rescan: renamed back (as when the disk is plugged in again), and
// replaced by another folder at its path (as when a disk is mounted on
// it, or taken away and its empty mount point left). Its photos added
// while it was away are indexed, and its watches are set again (once it
// stayed offline, unwatched, until the rescan an hour later).
func TestWatchRootBackWithoutRescan(t *testing.T) {
	r, src, away := rootGone(t, Options{Rescan: time.Hour}, "a/one.jpg")
	if err := os.WriteFile(filepath.Join(away, "a", "two.jpg"), []byte("IMG two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, r.root); err != nil {
		t.Fatal(err)
	}
	back := func(what string, want int) {
		t.Helper()
		if w, _ := r.nextBuild(DefaultRootPoll + maxBatchWait); len(w) != 1 || w[0] != r.root {
			t.Fatalf("%s: build within %v, want the root", what, w)
		}
		if n := len(records(t, r.db)); n != want {
			t.Errorf("%s: %d records, want %d", what, n, want)
		}
		if off := offlineOf(t, r.db); len(off) != 0 {
			t.Errorf("%s: still offline: %+v", what, off)
		}
		if !src.watching(filepath.Join(r.root, "a")) {
			t.Errorf("%s: no watches on the root's folders", what)
		}
	}
	back("renamed back", 2)

	// Another folder at the root's path, empty: a mount point whose disk
	// is away. Then the disk again.
	if err := os.Rename(r.root, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if w, _ := r.nextBuild(DefaultRootPoll + maxBatchWait); len(w) != 1 || w[0] != r.root {
		t.Fatalf("an empty folder in the root's place: build within %v, want the root", w)
	}
	if n, off := len(records(t, r.db)), offlineOf(t, r.db); n != 2 || len(off) != 1 {
		t.Errorf("an empty folder in the root's place: %d records, offline %+v: want 2 kept offline", n, off)
	}
	if err := os.Remove(r.root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, r.root); err != nil {
		t.Fatal(err)
	}
	back("the disk again", 2)
	r.write("a/three.jpg", "IMG three")
	r.event(fsnotify.Create, filepath.Join(r.root, "a", "three.jpg"))
	if w, _ := r.nextBuild(maxBatchWait); len(w) != 1 {
		t.Fatalf("a photo added once the root is back: build within %v", w)
	}
	if n := len(records(t, r.db)); n != 3 {
		t.Errorf("%d records after a photo was added, want 3", n)
	}
}

// rootGone starts a watcher with options o over a root "disk" holding
// files, builds it, then takes the root away (renamed to the returned
// folder, with its event) and waits for the build of the root.
func rootGone(t *testing.T, o Options, files ...string) (*rig, *fakeSource, string) {
	t.Helper()
	src := newSource()
	r := newRig(t, o, src)
	base := r.root
	r.root = filepath.Join(base, "disk")
	r.with(o)
	for _, f := range files {
		r.write(f, "IMG "+f)
	}
	r.start()
	r.nextBuild(maxBatchWait)
	away := filepath.Join(base, "unplugged")
	if err := os.Rename(r.root, away); err != nil {
		t.Fatal(err)
	}
	r.event(fsnotify.Remove, r.root)
	if w, _ := r.nextBuild(maxBatchWait); len(w) != 1 || w[0] != r.root {
		t.Fatalf("after the root went: build within %v, want the root", w)
	}
	return r, src, away
}

// offlineOf returns the folders the index at db keeps offline.
func offlineOf(t *testing.T, db string) []store.Offline {
	t.Helper()
	rd, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var off []store.Offline
	rd.View(func(s *store.Snapshot) error {
		off, err = s.Offline()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// A disk mounted on a root with no event, found by the rescan before the
// root poll: the rescan watches the new disk's folders and drops the
// watches of the folder beneath (once they stayed, and the root poll
// never looked again: the new disk's changes were seen only by rescans).
func TestWatchRootReplacedBeforeRescan(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{Rescan: time.Hour, RootPoll: 3 * time.Hour}, src)
	r.write("a/one.jpg", "IMG one")
	r.start()
	r.nextBuild(maxBatchWait)
	if !src.watching(filepath.Join(r.root, "a")) {
		t.Fatal("no watch on the root's folder after the first build")
	}
	beneath := r.root + ".beneath"
	if err := os.Rename(r.root, beneath); err != nil {
		t.Fatal(err)
	}
	r.write("b/two.jpg", "IMG two") // the mounted disk
	r.clock.Advance(time.Hour)
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("rescan within %v", w)
	}
	if !src.watching(filepath.Join(r.root, "b")) {
		t.Error("the mounted disk's folder is not watched after the rescan")
	}
	if src.watching(filepath.Join(r.root, "a")) {
		t.Error("the watch on the folder beneath the mounted disk is kept")
	}
	if !r.has("b/two.jpg") {
		t.Error("the mounted disk's photo is not indexed by the rescan")
	}
}

// A root whose stat hangs (a network filesystem whose server is gone)
// does not stop the watcher: events under the other root are still built
// while the poll waits. (Once the poll ran on the loop, and nothing was
// built until the stat returned.)
func TestWatchRootPollHangs(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{Rescan: time.Hour, RootPoll: settle}, src)
	hung := make(chan struct{})
	var once sync.Once
	prev := lookRoot
	lookRoot = func(root string) rootID {
		once.Do(func() { <-hung })
		return rootOf(root)
	}
	t.Cleanup(func() { close(hung); lookRoot = prev })
	r.write("a/one.jpg", "IMG one")
	r.start()
	r.nextBuild(maxBatchWait)
	r.clock.Advance(2 * settle) // the poll is due, and hangs
	r.write("a/two.jpg", "IMG two")
	r.event(fsnotify.Create, filepath.Join(r.root, "a", "two.jpg"))
	if w, _ := r.nextBuild(maxBatchWait); len(w) != 1 {
		t.Fatalf("build within %v, want the new photo's", w)
	}
	if !r.has("a/two.jpg") {
		t.Error("the new photo is not indexed while the root poll hangs")
	}
}

// A disk mounted below a root, and taken away again, raises no event in
// the folders watched (inotify watches the folder beneath a mount, and
// fsnotify drops IN_UNMOUNT): once it was seen only by the rescan, ten
// minutes later, its photos unsearchable and its changes unseen until
// then. Now the mount table is looked at with the roots: the mount point
// is built within RootPoll and its folders watched, and when the disk
// goes the mount point is built again (the build keeps a lost disk's
// photos offline) and the watches on the disk's folders are dropped.
func TestWatchMountBelowRoot(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{Rescan: time.Hour}, src)
	var mu sync.Mutex
	var mounted []Mount
	r.opts.Mounts = func() []Mount {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(mounted)
	}
	// The root is reached through a link, as /home on systems where it
	// leads to /var/home: the mount table names the real folders.
	realRoot := r.root
	r.root = filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(realRoot, r.root); err != nil {
		t.Fatal(err)
	}
	r.with(r.opts)
	r.write("a/one.jpg", "IMG one")
	mp := filepath.Join(r.root, "usb")
	realMP := filepath.Join(realRoot, "usb")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.nextBuild(maxBatchWait)

	// "Mount" a disk holding a folder of photos: another folder at the
	// mount point, and the mount table says so. No event.
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.MkdirAll(filepath.Join(disk, "trip"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(disk, "trip", "two.jpg"), []byte("IMG two"), 0o644); err != nil {
		t.Fatal(err)
	}
	beneath := filepath.Join(t.TempDir(), "beneath")
	if err := os.Rename(mp, beneath); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(disk, mp); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	mounted = []Mount{{"/proc", "22 0:21", "proc"}, {realMP, "90 8:17", "ext4"}, {filepath.Join(realRoot, ".hidden"), "91 8:18", "ext4"},
		{filepath.Join(realRoot, "nas"), "92 0:55", "nfs4"}}
	mu.Unlock()
	if w, _ := r.nextBuild(DefaultRootPoll + maxBatchWait); len(w) != 1 || w[0] != mp {
		t.Fatalf("a disk mounted below the root: build within %v, want %s", w, mp)
	}
	if !r.has("usb/trip/two.jpg") {
		t.Error("the mounted disk's photo is not indexed")
	}
	if !src.watching(filepath.Join(mp, "trip")) {
		t.Fatal("the mounted disk's folder is not watched")
	}
	r.write("usb/trip/three.jpg", "IMG three")
	r.event(fsnotify.Create, filepath.Join(mp, "trip", "three.jpg"))
	if w, _ := r.nextBuild(maxBatchWait); len(w) != 1 || !r.has("usb/trip/three.jpg") {
		t.Fatalf("a photo added to the mounted disk: build within %v, indexed %v", w, r.has("usb/trip/three.jpg"))
	}

	// "Unmount": the folder beneath shows again.
	if err := os.Rename(mp, disk); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(beneath, mp); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	mounted = []Mount{{"/proc", "22 0:21", "proc"}}
	mu.Unlock()
	if w, _ := r.nextBuild(DefaultRootPoll + maxBatchWait); len(w) != 1 || w[0] != mp {
		t.Fatalf("the disk taken away: build within %v, want %s", w, mp)
	}
	if src.watching(filepath.Join(mp, "trip")) {
		t.Error("the watch on the disk's folder is kept after it went")
	}
}
