package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/store"
)

// taggedSampler is fakeSampler with the probe of an iPhone clip (local
// date, GPS); it counts its probes, and fails those of the videos named in
// fail.
type taggedSampler struct {
	fakeSampler
	probes atomic.Int64
	fail   map[string]bool
}

var nyeInfo = video.Info{Taken: time.Date(2022, 12, 31, 20, 30, 0, 0, time.UTC), Offset: -300, HasOffset: true,
	Created: time.Date(2023, 1, 1, 1, 30, 0, 0, time.UTC), HasGPS: true, Lat: 40.7128, Lon: -74.006, DisplayWidth: 4, DisplayHeight: 4}

func (s *taggedSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	fr, _, err := s.fakeSampler.Sample(ctx, path)
	return fr, nyeInfo, err
}

func (s *taggedSampler) Probe(ctx context.Context, path string) (video.Info, error) {
	s.probes.Add(1)
	if s.fail[filepath.Base(path)] {
		return video.Info{}, fmt.Errorf("%w: cannot read it now", video.ErrNotVideo)
	}
	return nyeInfo, nil
}

// ageVideoMeta makes db what a clipidx before videoMetaVersion wrote:
// the frames of each video of old carry its metadata, and the index
// records no video metadata version.
func ageVideoMeta(t *testing.T, db string, old map[string]store.Meta) {
	t.Helper()
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var batch store.Batch
	err = w.View(func(s *store.Snapshot) error {
		return s.FilesPrefix("", func(p string, _ store.File) error {
			if v, _, ok := store.SplitFrame(p); ok {
				if m, ok := old[v]; ok {
					batch.PutMeta(p, m)
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	batch.SetVideoMetaVersion(0)
	if err := w.Commit(&batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func videoMetaVersionOf(t *testing.T, db string) uint64 {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var v uint64
	if err := r.View(func(s *store.Snapshot) (err error) { v, err = s.VideoMetaVersion(); return err }); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVideoMetaUpgrade: the frames of an index whose videos an older
// clipidx read get this code's metadata from a probe (no decode, no
// model), each video once, whatever stops a build on the way: no sampler
// (nothing changes, nothing fails), a partial build (what it walks is
// done and marked, the version waits), a failing probe (that video keeps
// its metadata, nothing fails, the next build tries it again), a stopped
// build (what it did stays, marked). Builds after that probe nothing
// (once every build probed every video it walked again, until one build
// read them all), and the first build that reads a video once all are
// marked records the version.
func TestVideoMetaUpgrade(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	a, b := filepath.Join(dir, "a.mov"), filepath.Join(dir, "sub", "b.mov")
	write(t, a, "FAKEVIDEO 0,4 a")
	write(t, b, "FAKEVIDEO 0,4,8 b")
	e, s := &fakeEnc{}, &taggedSampler{}
	build := func(o Options, within ...string) *Summary {
		t.Helper()
		o.Within = within
		sum, err := Build(context.Background(), db, []string{dir}, o)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Failed != 0 {
			t.Errorf("failures %v, want none", sum.Failures)
		}
		return sum
	}
	build(videoOpts(e, s))
	fresh, _ := readMetas(t, db)
	if v := videoMetaVersionOf(t, db); v != videoMetaVersion || s.probes.Load() != 0 || len(fresh) != 5 {
		t.Fatalf("new index: version %d, %d probes, metadata %v", v, s.probes.Load(), fresh)
	}
	if m := fresh[a+store.FrameSep+"4"]; m.City != "New York City" || m.Offset != -300 {
		t.Fatalf("a frame's metadata %+v, want New York's, at -05:00", m)
	}
	// What the code before Apple's tags made of it: the UTC time on the
	// build's clock, no position.
	stale := store.Meta{Taken: 1672536600, TakenSource: store.TakenVideo, HasOffset: true, Width: 4, Height: 4}
	ageVideoMeta(t, db, map[string]store.Meta{a: stale, b: stale})
	samples, embeds := s.calls.Load(), e.calls.Load()
	want := func(what string, version uint64, upgraded ...string) {
		t.Helper()
		got, _ := readMetas(t, db)
		for p, m := range got {
			v, _, _ := store.SplitFrame(p)
			w := stale
			if v == upgraded[0] || len(upgraded) > 1 && v == upgraded[1] {
				w = fresh[p]
			}
			if m != w {
				t.Errorf("%s: %s has %+v, want %+v", what, p, m, w)
			}
		}
		if len(got) != len(fresh) {
			t.Errorf("%s: %d records with metadata, want %d", what, len(got), len(fresh))
		}
		if v := videoMetaVersionOf(t, db); v != version {
			t.Errorf("%s: version %d, want %d", what, v, version)
		}
		if s.calls.Load() != samples || e.calls.Load() != embeds {
			t.Errorf("%s: %d samplings, %d encoder calls", what, s.calls.Load()-samples, e.calls.Load()-embeds)
		}
	}

	build(opts(e))
	want("without a sampler", 0, "")
	build(videoOpts(e, s), filepath.Join(dir, "sub"))
	want("partial build", 0, b)
	if n := s.probes.Swap(0); n != 1 {
		t.Errorf("partial build: %d probes, want 1", n)
	}
	s.fail = map[string]bool{"a.mov": true}
	build(videoOpts(e, s))
	want("a probe fails", 0, b)
	if n := s.probes.Swap(0); n != 1 {
		t.Errorf("full build: %d probes, want 1 (b was read by the partial build)", n)
	}
	s.fail = nil

	ctx, cancel := context.WithCancel(context.Background())
	var first string
	o := videoOpts(e, s)
	o.Workers = 1
	o.Progress = func(ev Event) {
		if ev.Phase == "meta" && first == "" {
			first = ev.Path
			cancel()
		}
	}
	if sum, err := Build(ctx, db, []string{dir}, o); err == nil || sum.Complete {
		t.Fatalf("stopped build: %v, complete %v", err, sum.Complete)
	}
	if first != a {
		t.Fatalf("first video probed %q, want %s", first, a)
	}
	want("stopped build", 0, a, b)
	if err := store.Check(db); err != nil {
		t.Fatal(err)
	}

	s.probes.Store(0)
	build(videoOpts(e, s))
	want("complete build", 0, a, b)
	if n := s.probes.Swap(0); n != 0 {
		t.Errorf("complete build: %d probes, want none (both were read)", n)
	}
	// A new video: sampled, read, and then every video is: the version.
	write(t, filepath.Join(dir, "c.mov"), "FAKEVIDEO 0 c")
	build(videoOpts(e, s))
	if v := videoMetaVersionOf(t, db); v != videoMetaVersion {
		t.Errorf("after a new video: version %d, want %d", v, videoMetaVersion)
	}
	if n := s.probes.Swap(0); n != 0 {
		t.Errorf("build of a new video: %d probes, want none", n)
	}
	build(videoOpts(e, s))
	if n := s.probes.Load(); n != 0 {
		t.Errorf("the next build probed %d videos, want none", n)
	}
}

// TestVideoMetaUpgradeRootByRoot: an index of two roots, each built on
// its own (the first three times before the second once), is upgraded
// video by video:
// each build probes only the videos of its root not read yet, never the
// same one twice, and the build that reads the last one records the
// version. (Once only a build of both roots together could record it, and
// every build before that probed every video of its root again.)
func TestVideoMetaUpgradeRootByRoot(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	a, b := filepath.Join(one, "a.mov"), filepath.Join(two, "b.mov")
	write(t, a, "FAKEVIDEO 0,4 a")
	write(t, b, "FAKEVIDEO 0,4,8 b")
	e, s := &fakeEnc{}, &taggedSampler{}
	build := func(root string) {
		t.Helper()
		sum, err := Build(context.Background(), db, []string{root}, videoOpts(e, s))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Failed != 0 {
			t.Errorf("failures %v, want none", sum.Failures)
		}
	}
	build(one)
	build(two)
	stale := store.Meta{Taken: 1672536600, TakenSource: store.TakenVideo, HasOffset: true, Width: 4, Height: 4}
	ageVideoMeta(t, db, map[string]store.Meta{a: stale, b: stale})
	s.probes.Store(0)
	for i := range 3 {
		build(one)
		if n := s.probes.Swap(0); n != int64(max(0, 1-i)) {
			t.Errorf("build %d of the first root: %d probes, want %d", i+1, n, max(0, 1-i))
		}
		if v := videoMetaVersionOf(t, db); v != 0 {
			t.Errorf("build %d of the first root: version %d, want none yet", i+1, v)
		}
	}
	build(two)
	if n := s.probes.Swap(0); n != 1 {
		t.Errorf("build of the second root: %d probes, want 1", n)
	}
	if v := videoMetaVersionOf(t, db); v != videoMetaVersion {
		t.Errorf("every video read: version %d, want %d", v, videoMetaVersion)
	}
	got, _ := readMetas(t, db)
	for p, m := range got {
		if m == stale {
			t.Errorf("%s kept the old metadata", p)
		}
	}
	build(one)
	build(two)
	if n := s.probes.Load(); n != 0 {
		t.Errorf("builds after the upgrade probed %d videos, want none", n)
	}
}

// TestVideoTouchedProbeFails: a video whose time changed (same bytes)
// keeps its frames' date and place when its probe fails: once they were
// replaced by the file's new time and no place.
func TestVideoTouchedProbeFails(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	a := filepath.Join(dir, "a.mov")
	write(t, a, "FAKEVIDEO 0,4 a")
	e, s := &fakeEnc{}, &taggedSampler{}
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s)); err != nil {
		t.Fatal(err)
	}
	before, _ := readMetas(t, db)
	if m := before[a+store.FrameSep+"4"]; m.City != "New York City" {
		t.Fatalf("a frame's metadata %+v, want New York's", m)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(a, later, later); err != nil {
		t.Fatal(err)
	}
	s.fail = map[string]bool{"a.mov": true}
	sum, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 0 || s.probes.Load() == 0 {
		t.Errorf("failures %v, %d probes: want none and a probe", sum.Failures, s.probes.Load())
	}
	after, _ := readMetas(t, db)
	for p, m := range before {
		if after[p] != m {
			t.Errorf("%s: %+v after the failed probe, want %+v", p, after[p], m)
		}
	}
}

// TestVideoMetaUpgradeLiveMovie: on an index of a clipidx that read no
// video metadata and knew no Live Photos (a movie recorded as a video), the
// first build turns the movie into a Live Photo's record and probes no
// frame it removed: its commit succeeds (before, it failed with "metadata
// of MOV#t=0: no file record").
func TestVideoMetaUpgradeLiveMovie(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	const id = "1F3B6D2A-0000-4000-8000-0000000000AA"
	mov, still := filepath.Join(dir, "IMG_0001.MOV"), filepath.Join(dir, "IMG_0001.JPG")
	write(t, mov, fakeLiveMovie(id, "0,1.5"))
	write(t, filepath.Join(dir, "clip.mov"), "FAKEVIDEO 0,4 clip")
	e, s := &fakeEnc{}, &taggedSampler{}
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s)); err != nil {
		t.Fatal(err)
	}
	// The still arrives (its movie untouched); the index is aged to what an
	// older clipidx wrote.
	write(t, still, fakeStill(id, "one"))
	stale := store.Meta{Taken: 1672536600, TakenSource: store.TakenVideo, HasOffset: true, Width: 4, Height: 4}
	ageVideoMeta(t, db, map[string]store.Meta{mov: stale, filepath.Join(dir, "clip.mov"): stale})
	sum, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s))
	if err != nil {
		t.Fatalf("the upgrade build: %v", err)
	}
	if sum.LiveVideos != 1 {
		t.Errorf("summary %+v, want the movie found a Live Photo's", sum)
	}
	wantRecords(t, db, dir, "IMG_0001.JPG", "IMG_0001.MOV!", "clip.mov#t=0", "clip.mov#t=4")
	if err := store.Check(db); err != nil {
		t.Fatal(err)
	}
}
