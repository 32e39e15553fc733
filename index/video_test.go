package index

import (
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/store"
)

// fakeSampler reads a "video" that lists its frame times:
// "FAKEVIDEO 0,4,8 anything" (anywhere in the file): each frame is a 4x4 picture made from the
// file's content and the time. "BROKEN" in the content is a corrupt video,
// "HANG" one whose decoding times out by the context.
type fakeSampler struct{ calls atomic.Int64 }

func (s *fakeSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	s.calls.Add(1)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, video.Info{}, err
	}
	text := string(data)
	if i := strings.Index(text, "FAKEVIDEO"); i > 0 { // after a Live Photo movie's boxes
		text = text[i:]
	}
	switch {
	case strings.Contains(text, "BROKEN"):
		return nil, video.Info{}, fmt.Errorf("%w: moov atom not found", video.ErrNotVideo)
	case strings.Contains(text, "HANG"):
		return nil, video.Info{}, context.DeadlineExceeded
	}
	f := strings.Fields(text)
	var frames []video.Frame
	for _, ts := range strings.Split(f[1], ",") {
		t, _ := strconv.ParseFloat(ts, 64)
		rgb := []byte(strings.Repeat(text+ts, 48))[:48]
		frames = append(frames, video.Frame{Time: t, Width: 4, Height: 4, RGB: rgb})
	}
	return frames, video.Info{}, nil
}

func fakeFramePre(img image.Image) ([]float32, error) {
	return fakePixels(img.(*image.RGBA).Pix), nil
}

func videoOpts(e *fakeEnc, s VideoSampler) Options {
	o := opts(e)
	o.Video, o.PreprocessFrame = s, fakeFramePre
	return o
}

// records lists the index's records as "path" (indexed) or "path!" (failed).
func records(t *testing.T, db string) []string {
	t.Helper()
	if err := store.Check(db); err != nil {
		t.Fatalf("index check: %v", err)
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	err = r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error {
			if f.Failed() {
				p += "!"
			}
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantRecords(t *testing.T, db, dir string, want ...string) {
	t.Helper()
	got := records(t, db)
	for i := range want {
		want[i] = filepath.Join(dir, want[i])
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("records:\n %s\nwant:\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
}

// TestBuildVideoLife: a video's frames are records VIDEO#t=S, written,
// kept, replaced, reused on a rename and removed together; a video that
// fails has none; without a sampler videos are skipped and their records
// kept.
func TestBuildVideoLife(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	write(t, filepath.Join(dir, "a.png"), png+"a")
	write(t, filepath.Join(dir, "v.mp4"), "FAKEVIDEO 0,4,8.25 one")
	e, s := &fakeEnc{}, &fakeSampler{}
	build := func(o Options, want string) *Summary {
		t.Helper()
		sum, err := Build(context.Background(), db, []string{dir}, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("summary %s, want %s (failures %v)", got, want, sum.Failures)
		}
		return sum
	}
	sum := build(videoOpts(e, s), "added=2 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	if sum.Frames != 3 || e.images.Load() != 4 {
		t.Errorf("%d frames, %d images embedded; want 3 frames and 4 images", sum.Frames, e.images.Load())
	}
	wantRecords(t, db, dir, "a.png", "v.mp4#t=0", "v.mp4#t=4", "v.mp4#t=8.25")

	build(videoOpts(e, s), "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	if s.calls.Load() != 1 {
		t.Errorf("an unchanged video was sampled again (%d calls)", s.calls.Load())
	}

	// Changed: sampled again, its frames replaced together.
	write(t, filepath.Join(dir, "v.mp4"), "FAKEVIDEO 0,5 two")
	build(videoOpts(e, s), "added=0 updated=1 unchanged=1 reused=0 removed=0 failed=0")
	wantRecords(t, db, dir, "a.png", "v.mp4#t=0", "v.mp4#t=5")

	// Renamed: the frames move without a decode or a model run.
	calls, images := s.calls.Load(), e.images.Load()
	rename(t, filepath.Join(dir, "v.mp4"), filepath.Join(dir, "w.MOV"))
	sum = build(videoOpts(e, s), "added=0 updated=0 unchanged=1 reused=1 removed=1 failed=0")
	wantRecords(t, db, dir, "a.png", "w.MOV#t=0", "w.MOV#t=5")
	if s.calls.Load() != calls || e.images.Load() != images || sum.Frames != 2 {
		t.Errorf("a renamed video was sampled (%d) or embedded (%d), or gave %d frames", s.calls.Load()-calls, e.images.Load()-images, sum.Frames)
	}

	// Touched: same content, the stat is updated, nothing decoded.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "w.MOV"), later, later); err != nil {
		t.Fatal(err)
	}
	build(videoOpts(e, s), "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	build(videoOpts(e, s), "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	if s.calls.Load() != calls {
		t.Errorf("a touched video was sampled again")
	}

	// Not the video's fault (a time-out of the context): reported, its
	// frames kept, read again next time.
	write(t, filepath.Join(dir, "w.MOV"), "FAKEVIDEO HANG")
	sum = build(videoOpts(e, s), "added=0 updated=0 unchanged=1 reused=0 removed=0 failed=1")
	if len(sum.Failures) != 1 || !sum.Failures[0].Transient {
		t.Errorf("failures %+v, want one transient", sum.Failures)
	}
	wantRecords(t, db, dir, "a.png", "w.MOV#t=0", "w.MOV#t=5")

	// Broken: one named failure, its frames gone.
	write(t, filepath.Join(dir, "w.MOV"), "FAKEVIDEO BROKEN")
	sum = build(videoOpts(e, s), "added=0 updated=0 unchanged=1 reused=0 removed=0 failed=1")
	if len(sum.Failures) != 1 || sum.Failures[0].Transient || !strings.Contains(sum.Failures[0].Error, "not a readable video") {
		t.Errorf("failures %+v", sum.Failures)
	}
	wantRecords(t, db, dir, "a.png", "w.MOV!")
	build(videoOpts(e, s), "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")

	// Mended: its failure record goes, its frames come.
	write(t, filepath.Join(dir, "w.MOV"), "FAKEVIDEO 1 three")
	build(videoOpts(e, s), "added=0 updated=1 unchanged=1 reused=0 removed=0 failed=0")
	wantRecords(t, db, dir, "a.png", "w.MOV#t=1")

	// No sampler (no ffmpeg): a new video is skipped, not failed, and a
	// recorded one keeps its frames; a build with the sampler takes the
	// new one up.
	write(t, filepath.Join(dir, "sub", "x.webm"), "FAKEVIDEO 0,2 four")
	sum = build(opts(e), "added=0 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	if sum.VideosSkipped != 1 {
		t.Errorf("%d videos skipped, want the new one", sum.VideosSkipped)
	}
	wantRecords(t, db, dir, "a.png", "w.MOV#t=1")
	build(videoOpts(e, s), "added=1 updated=0 unchanged=2 reused=0 removed=0 failed=0")
	wantRecords(t, db, dir, "a.png", "sub/x.webm#t=0", "sub/x.webm#t=2", "w.MOV#t=1")

	// Deleted: all its frames go, counted once.
	removeAll(t, filepath.Join(dir, "sub"))
	build(videoOpts(e, s), "added=0 updated=0 unchanged=2 reused=0 removed=1 failed=0")
	wantRecords(t, db, dir, "a.png", "w.MOV#t=1")
}

// BenchmarkHashVideo hashes a 256 MiB file as a build hashes a video
// (streamed SHA-256; the file in the page cache): MB/s is the cost of the
// content hash that lets a renamed video reuse its frames.
func BenchmarkHashVideo(b *testing.B) {
	p := filepath.Join(b.TempDir(), "big.mp4")
	data := make([]byte, 256<<20)
	for i := range data {
		data[i] = byte(i * 2654435761 >> 13)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if _, err := hashFile(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// cancelSampler cancels the build when asked for its second video, as
// Ctrl-C during a decode does.
type cancelSampler struct {
	fakeSampler
	cancel context.CancelFunc
}

func (s *cancelSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	if s.calls.Load() == 1 {
		s.cancel()
		<-ctx.Done()
		return nil, video.Info{}, ctx.Err()
	}
	return s.fakeSampler.Sample(ctx, path)
}

// TestBuildVideoInterrupted: a build stopped while a video decodes keeps
// the videos finished before, each with all its frames, records nothing
// of the one stopped, and the next build completes the rest.
func TestBuildVideoInterrupted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	write(t, filepath.Join(dir, "a.mp4"), "FAKEVIDEO 0,3,6 a")
	write(t, filepath.Join(dir, "b.mp4"), "FAKEVIDEO 0,2 b")
	ctx, cancel := context.WithCancel(context.Background())
	s := &cancelSampler{cancel: cancel}
	o := videoOpts(&fakeEnc{}, s)
	o.Workers = 1
	if _, err := Build(ctx, db, []string{dir}, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted build: %v, want context.Canceled", err)
	}
	// The first video is recorded whole when its result reached the
	// recorder before the stop, else not at all (a decoded video is not
	// sent to the model once the build is stopped).
	recs := records(t, db)
	whole := []string{filepath.Join(dir, "a.mp4#t=0"), filepath.Join(dir, "a.mp4#t=3"), filepath.Join(dir, "a.mp4#t=6")}
	if len(recs) != 0 && !slices.Equal(recs, whole) {
		t.Fatalf("after the stop: %v, want all of a.mp4's frames or none", recs)
	}
	sum, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, &fakeSampler{}))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Added+sum.Unchanged != 2 || sum.Added != 2-len(recs)/3 {
		t.Errorf("summary %s after the interrupted build that kept %d records", sumOf(sum), len(recs))
	}
	wantRecords(t, db, dir, "a.mp4#t=0", "a.mp4#t=3", "a.mp4#t=6", "b.mp4#t=0", "b.mp4#t=2")
}

// TestBuildVideoWithin: a partial build (a watcher's changed paths) that
// names a video file sees the video's frame records: a changed video's
// frames are replaced, not added beside the old ones, and a deleted
// video's frames go with it.
func TestBuildVideoWithin(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	v := filepath.Join(dir, "v.mp4")
	write(t, filepath.Join(dir, "a.png"), png+"a")
	write(t, v, "FAKEVIDEO 0,4 one")
	e, s := &fakeEnc{}, &fakeSampler{}
	build := func(within ...string) {
		t.Helper()
		o := videoOpts(e, s)
		o.Within = within
		if _, err := Build(context.Background(), db, []string{dir}, o); err != nil {
			t.Fatal(err)
		}
	}
	build()
	wantRecords(t, db, dir, "a.png", "v.mp4#t=0", "v.mp4#t=4")

	write(t, v, "FAKEVIDEO 0,7 two")
	build(v)
	wantRecords(t, db, dir, "a.png", "v.mp4#t=0", "v.mp4#t=7")

	removeAll(t, v)
	build(v)
	wantRecords(t, db, dir, "a.png")
}

// datedSampler is fakeSampler with a creation time and a probe, as
// video.Sampler has.
type datedSampler struct {
	fakeSampler
	created time.Time
	probes  atomic.Int64
}

func (s *datedSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	fr, _, err := s.fakeSampler.Sample(ctx, path)
	return fr, video.Info{Created: s.created, DisplayWidth: 4, DisplayHeight: 4}, err
}

func (s *datedSampler) Probe(ctx context.Context, path string) (video.Info, error) {
	s.probes.Add(1)
	return video.Info{Created: s.created, DisplayWidth: 4, DisplayHeight: 4}, nil
}

// TestBuildVideoMeta: a video's frames carry its creation time (on the
// build's local clock, source "video") and displayed size, and keep them
// when the video is renamed (its frames reused without a decode).
func TestBuildVideoMeta(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	write(t, filepath.Join(dir, "v.mp4"), "FAKEVIDEO 0,4 dated")
	created := time.Date(2019, 7, 14, 6, 5, 12, 0, time.UTC)
	s := &datedSampler{created: created}
	check := func(paths ...string) {
		t.Helper()
		r, err := store.OpenReader(db, store.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.View(func(sn *store.Snapshot) error {
			for _, p := range paths {
				m, ok, err := sn.Meta(filepath.Join(dir, p))
				if err != nil || !ok {
					t.Fatalf("%s: no metadata (%v)", p, err)
				}
				_, off := created.In(time.Local).Zone()
				if m.TakenSource != store.TakenVideo || m.Taken != created.Unix()+int64(off) || m.Width != 4 || m.Height != 4 {
					t.Errorf("%s: metadata %+v, want the creation time %v from the video", p, m, created)
				}
			}
			return nil
		})
	}
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, s)); err != nil {
		t.Fatal(err)
	}
	check("v.mp4#t=0", "v.mp4#t=4")
	rename(t, filepath.Join(dir, "v.mp4"), filepath.Join(dir, "w.mp4"))
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, s)); err != nil {
		t.Fatal(err)
	}
	check("w.mp4#t=0", "w.mp4#t=4")
	if s.calls.Load() != 1 || s.probes.Load() != 1 {
		t.Errorf("%d decodes and %d probes, want 1 decode and a probe for the rename", s.calls.Load(), s.probes.Load())
	}
}

// TestBuildVideoCopies: copies of a new video in one build are sampled and
// embedded once; each gets its own frame records on the same vectors. A
// broken video's copies fail with its error.
func TestBuildVideoCopies(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	for _, name := range []string{"v1.mp4", "v2.mp4", "sub/v3.mov"} {
		write(t, filepath.Join(dir, name), "FAKEVIDEO 0,4 same")
	}
	for _, name := range []string{"b1.mp4", "b2.mp4"} {
		write(t, filepath.Join(dir, name), "FAKEVIDEO BROKEN copy")
	}
	e, s := &fakeEnc{}, &fakeSampler{}
	sum, err := Build(context.Background(), db, []string{dir}, videoOpts(e, s))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=1 updated=0 unchanged=0 reused=2 removed=0 failed=2"; got != want {
		t.Errorf("summary %s, want %s (failures %v)", got, want, sum.Failures)
	}
	if s.calls.Load() != 2 || e.images.Load() != 2 {
		t.Errorf("%d videos sampled, %d frames embedded; want 2 and 2 (one of each content)", s.calls.Load(), e.images.Load())
	}
	if sum.Frames != 6 {
		t.Errorf("%d frames, want 6", sum.Frames)
	}
	wantRecords(t, db, dir, "b1.mp4!", "b2.mp4!", "sub/v3.mov#t=0", "sub/v3.mov#t=4",
		"v1.mp4#t=0", "v1.mp4#t=4", "v2.mp4#t=0", "v2.mp4#t=4")
	for _, f := range sum.Failures {
		if !strings.Contains(f.Error, "not a readable video") {
			t.Errorf("failure %+v, want the broken video's error", f)
		}
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.View(func(sn *store.Snapshot) error {
		for _, at := range []string{"0", "4"} {
			var vecs []store.VecID
			for _, name := range []string{"v1.mp4", "v2.mp4", "sub/v3.mov"} {
				f, ok, err := sn.File(filepath.Join(dir, name) + store.FrameSep + at)
				if err != nil || !ok || f.Vec == 0 {
					t.Errorf("%s at %s: %+v, %v, %v", name, at, f, ok, err)
				}
				vecs = append(vecs, f.Vec)
			}
			if vecs[0] != vecs[1] || vecs[0] != vecs[2] {
				t.Errorf("the frames at %s s of the copies have vectors %v, want one", at, vecs)
			}
		}
		return nil
	})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Nothing left to do: the copies are unchanged now.
	sum, err = Build(context.Background(), db, []string{dir}, videoOpts(e, s))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=0 updated=0 unchanged=5 reused=0 removed=0 failed=0"; got != want {
		t.Errorf("second build: summary %s, want %s", got, want)
	}
}

// slowSampler samples the videos whose content holds "SLOW" 20 ms late.
type slowSampler struct{ fakeSampler }

func (s *slowSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "SLOW") {
		time.Sleep(20 * time.Millisecond)
	}
	return s.fakeSampler.Sample(ctx, path)
}

// stopEnc stops the build during its first pass, 50 ms in, as Ctrl-C
// while the model runs: the results that came meanwhile are recorded but
// not embedded.
type stopEnc struct {
	fakeEnc
	cancel context.CancelFunc
	once   sync.Once
}

func (e *stopEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	e.once.Do(func() {
		time.Sleep(50 * time.Millisecond)
		e.cancel()
	})
	return e.fakeEnc.EncodeImages(pix, n)
}

// TestBuildVideoCopiesStopped: a build stopped while a video and its copy
// wait for the model keeps what was embedded before the stop (the copy
// does not take frames whose vectors were never stored, which failed the
// stopped build's last commit and lost it), and the next build completes
// them.
func TestBuildVideoCopiesStopped(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	write(t, filepath.Join(dir, "a.mp4"), "FAKEVIDEO 0,3 SLOW")
	write(t, filepath.Join(dir, "b.mp4"), "FAKEVIDEO 0,3 SLOW")
	write(t, filepath.Join(dir, "x.mp4"), "FAKEVIDEO 1 other")
	ctx, cancel := context.WithCancel(context.Background())
	o := videoOpts(nil, &slowSampler{})
	o.Encoder = &stopEnc{cancel: cancel}
	o.Workers = 3
	if _, err := Build(ctx, db, []string{dir}, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped build: %v, want context.Canceled", err)
	}
	// x.mp4, embedded before the stop, is kept; a.mp4 came back but was
	// not embedded, so neither it nor its copy is recorded.
	wantRecords(t, db, dir, "x.mp4#t=1")
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, &fakeSampler{})); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, db, dir, "a.mp4#t=0", "a.mp4#t=3", "b.mp4#t=0", "b.mp4#t=3", "x.mp4#t=1")
}

// TestBuildStoppedCommitFails: when the commit a stopped build makes of
// its finished work fails, Build says so beside the stop (the work is not
// saved), and the next build does it.
func TestBuildStoppedCommitFails(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	write(t, filepath.Join(dir, "x.mp4"), "FAKEVIDEO 1 other")
	ctx, cancel := context.WithCancel(context.Background())
	o := videoOpts(nil, &fakeSampler{})
	o.Encoder = &stopEnc{cancel: cancel}
	o.commitFails = func() error {
		if ctx.Err() != nil {
			return errors.New("no space left on device")
		}
		return nil
	}
	_, err := Build(ctx, db, []string{dir}, o)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("stopped build whose last commit failed: %v, want the stop and the commit's error", err)
	}
	wantRecords(t, db, dir)
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, &fakeSampler{})); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, db, dir, "x.mp4#t=1")
}

// TestBuildVideoWithoutSampler: while ffmpeg is missing (no sampler), a
// renamed or copied video still takes the frames recorded for its bytes,
// with their metadata, and a touched one keeps its frames under its new
// time; a video no record has is skipped, whether a recorded video has its
// size (then it is hashed) or not. A copy of a video dated by its file's
// time is dated by its own.
func TestBuildVideoWithoutSampler(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	write(t, filepath.Join(dir, "a.mp4"), "FAKEVIDEO 0,4 first")
	write(t, filepath.Join(dir, "b.mp4"), "FAKEVIDEO 1 second")
	created := time.Date(2019, 7, 14, 6, 5, 12, 0, time.UTC)
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, &datedSampler{created: created})); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rename(t, filepath.Join(dir, "a.mp4"), filepath.Join(dir, "sub", "c.mp4"))
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "b.mp4"), later, later); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "d.mp4"), "FAKEVIDEO 2 others") // b's size, other bytes
	write(t, filepath.Join(dir, "e.mp4"), "FAKEVIDEO 2 a size no video has")
	e := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{dir}, opts(e))
	if err != nil {
		t.Fatal(err)
	}
	wantRecords(t, db, dir, "b.mp4#t=1", "sub/c.mp4#t=0", "sub/c.mp4#t=4")
	if sum.Reused != 1 || sum.VideosSkipped != 2 || sum.Failed != 0 || sum.Removed != 1 || e.calls.Load() != 0 {
		t.Errorf("summary %+v, %d encoder passes; want 1 reused (the rename), 2 skipped, 1 removed and no pass", sum, e.calls.Load())
	}
	checkMeta := func(p, source string, taken time.Time) {
		t.Helper()
		r, err := store.OpenReader(db, store.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.View(func(s *store.Snapshot) error {
			m, ok, err := s.Meta(filepath.Join(dir, p))
			_, off := taken.In(time.Local).Zone()
			if err != nil || !ok || m.TakenSource != source || m.Taken != taken.Unix()+int64(off) {
				t.Errorf("%s: metadata %+v (%v, %v), want the time %v from %s", p, m, ok, err, taken, source)
			}
			return nil
		})
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.View(func(s *store.Snapshot) error {
		f, ok, err := s.File(filepath.Join(dir, "b.mp4#t=1"))
		if err != nil || !ok || f.MtimeNs != later.UnixNano() {
			t.Errorf("b.mp4's frame: %+v, %v, %v; want the touched time %d", f, ok, err, later.UnixNano())
		}
		return nil
	})
	r.Close()
	checkMeta("sub/c.mp4#t=0", store.TakenVideo, created)
	checkMeta("b.mp4#t=1", store.TakenVideo, created)

	// A copy of a video dated by its file's time takes the copy's time.
	write(t, filepath.Join(dir, "f.mp4"), "FAKEVIDEO 3 undated")
	if _, err := Build(context.Background(), db, []string{dir}, videoOpts(&fakeEnc{}, &fakeSampler{})); err != nil {
		t.Fatal(err)
	}
	copied := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	write(t, filepath.Join(dir, "g.mp4"), "FAKEVIDEO 3 undated")
	if err := os.Chtimes(filepath.Join(dir, "g.mp4"), copied, copied); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), db, []string{dir}, opts(e)); err != nil {
		t.Fatal(err)
	}
	checkMeta("g.mp4#t=3", store.TakenMtime, copied)
}

// TestBuildCommitFailsCountsUnsaved: a build whose commit failed (a full
// disk) reported "added 960" of which 896 were in the index, and nothing
// said the rest were not. Summary.Unsaved counts them now, and the counts
// less it are what the index holds.
func TestBuildCommitFailsCountsUnsaved(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	for i := range 12 {
		write(t, filepath.Join(dir, fmt.Sprintf("p%02d.png", i)), png+fmt.Sprint(i))
	}
	o := opts(&fakeEnc{})
	commits := 0
	o.commitFails = func() error {
		if commits++; commits == 2 {
			return errors.New("no space left on device")
		}
		return nil
	}
	sum, err := Build(context.Background(), db, []string{dir}, o)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("build whose second commit failed: %v", err)
	}
	held := len(records(t, db))
	if sum == nil || sum.Unsaved == 0 || sum.Added-sum.Unsaved != held {
		t.Errorf("summary %+v with %d records in the index: want Unsaved = added - held", sum, held)
	}
}
