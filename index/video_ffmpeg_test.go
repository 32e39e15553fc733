package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// TestFrameEqualsItsPNG: a sampled frame, preprocessed as a decoded image,
// gives the tensor that the PNG ffmpeg writes of the same frame gives
// through the photo path.
func TestFrameEqualsItsPNG(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "phone.mp4")
	// A rotated phone-style clip with non-square pixels: the PNG must see
	// the same turned, widened picture.
	plain := filepath.Join(dir, "plain.mp4")
	videotest.Bars(t, tools, plain, "480x360", 3, "-vf", "setsar=4/3")
	videotest.FFmpeg(t, tools, "-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", clip)
	s := video.New(tools, video.Options{Interval: time.Second, DupDiff: -1})
	frames, info, err := s.Sample(context.Background(), clip)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 2 {
		t.Fatalf("%d frames, want one a second of 3", len(frames))
	}
	pattern := filepath.Join(dir, "frame%03d.png")
	videotest.FFmpeg(t, tools, "-i", clip, "-vf", strings.TrimSuffix(s.Filter(info), ",format=rgb24")+",format=rgb24",
		"-vsync", "vfr", pattern)
	proc := preprocess.New(preprocess.DefaultConfig(), preprocess.Options{})
	for i, f := range frames {
		png, err := os.ReadFile(filepath.Join(dir, "frame"+pad3(i+1)+".png"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := proc.Bytes(png, "frame.png")
		if err != nil {
			t.Fatal(err)
		}
		got := proc.Image(f.Image())
		if !slices.Equal(got, want) {
			t.Errorf("frame %d at %g s: its tensor differs from its PNG's", i, f.Time)
		}
	}
}

func pad3(i int) string { return fmt.Sprintf("%03d", i) }

// TestBuildVideoCuts: a real clip with cuts is indexed as frames within
// one sampling interval of each cut; a truncated copy, an audio-only file
// and a zero-length file fail by name, and none stops the build.
func TestBuildVideoCuts(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "cuts.mp4")
	videotest.Cuts(t, tools, clip, "320x240", 5, "red", "lime", "blue")
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "bad", "truncated.mp4"), string(data[:len(data)/4]))
	write(t, filepath.Join(dir, "bad", "empty.mov"), "")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", filepath.Join(dir, "bad", "audio.m4v"))
	write(t, filepath.Join(dir, "a.png"), png+"a")

	db := filepath.Join(t.TempDir(), "idx.db")
	interval := 3 * time.Second
	o := opts(&fakeEnc{})
	o.Video = video.New(tools, video.Options{Interval: interval})
	o.PreprocessFrame = fakeFramePre
	sum, err := Build(context.Background(), db, []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := sumOf(sum); got != "added=2 updated=0 unchanged=0 reused=0 removed=0 failed=3" {
		t.Errorf("summary %s, failures %+v", got, sum.Failures)
	}
	for _, f := range sum.Failures {
		if f.Transient || !strings.HasPrefix(f.Path, filepath.Join(dir, "bad")) {
			t.Errorf("failure %+v: want the files under bad/, each recorded", f)
		}
	}
	var times []float64
	for _, p := range records(t, db) {
		if v, tm, ok := store.SplitFrame(p); ok && v == clip {
			times = append(times, tm)
		}
	}
	for _, cut := range []float64{0, 5, 10} {
		if !slices.ContainsFunc(times, func(tm float64) bool { return tm >= cut && tm < cut+interval.Seconds() }) {
			t.Errorf("frames at %v: none within %v after the cut at %g s", times, interval, cut)
		}
	}
	if len(times) != 3 || sum.Frames != 3 {
		t.Errorf("frames at %v (%d counted), want one a colour", times, sum.Frames)
	}
}

// TestBuildVideoMetaLocal: a real iPhone clip's frames are dated by the
// camera's local clock with its offset (com.apple.quicktime.creationdate,
// not the UTC creation_time, which is the next day), an Android clip's by
// its UTC creation_time on the build's clock; both get the GPS position of
// their ISO 6709 location and its place, as a photo with EXIF GPS does.
func TestBuildVideoMetaLocal(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	src := []string{"-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=10", "-c:v", "libx264", "-preset", "ultrafast"}
	videotest.FFmpeg(t, tools, append(src, "-movflags", "use_metadata_tags",
		"-metadata", "creation_time=2023-01-01T01:30:00Z",
		"-metadata", "com.apple.quicktime.creationdate=2022-12-31T20:30:00-0500",
		"-metadata", "com.apple.quicktime.location.ISO6709=+40.7128-074.0060/", filepath.Join(dir, "nye.mov"))...)
	videotest.FFmpeg(t, tools, append(src, "-metadata", "creation_time=2023-06-01T12:00:00Z",
		"-metadata", "location=+48.8566+002.3522+035.000/", filepath.Join(dir, "android.mp4"))...)

	db := filepath.Join(t.TempDir(), "idx.db")
	o := opts(&fakeEnc{})
	o.Video = video.New(tools, video.Options{Interval: time.Second})
	o.PreprocessFrame = fakeFramePre
	if _, err := Build(context.Background(), db, []string{dir}, o); err != nil {
		t.Fatal(err)
	}
	android := time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC).In(time.Local)
	_, androidOff := android.Zone()
	want := map[string]store.Meta{
		"nye.mov": {Taken: time.Date(2022, 12, 31, 20, 30, 0, 0, time.UTC).Unix(), Offset: -300, HasOffset: true,
			TakenSource: store.TakenVideo, HasGPS: true, Lat: 40.7128, Lon: -74.006,
			City: "New York City", Region: "New York", Country: "United States", CountryCode: "US", Width: 160, Height: 120},
		"android.mp4": {Taken: android.Unix() + int64(androidOff), Offset: int16(androidOff / 60), HasOffset: true,
			TakenSource: store.TakenVideo, HasGPS: true, Lat: 48.8566, Lon: 2.3522, HasAlt: true, Alt: 35,
			City: "Paris 04 Hôtel-de-Ville", Region: "Île-de-France", Country: "France", CountryCode: "FR", Width: 160, Height: 120},
	}
	paths := records(t, db)
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]int{}
	err = r.View(func(sn *store.Snapshot) error {
		for _, p := range paths {
			v, _, ok := store.SplitFrame(p)
			if !ok {
				continue
			}
			name := filepath.Base(v)
			seen[name]++
			m, ok, err := sn.Meta(p)
			if err != nil || !ok {
				t.Fatalf("%s: no metadata (%v)", p, err)
			}
			if m != want[name] {
				t.Errorf("%s: metadata\n%+v, want\n%+v", p, m, want[name])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen["nye.mov"] == 0 || seen["android.mp4"] == 0 {
		t.Errorf("frames of each video: %v, want both", seen)
	}
}

// countingSampler is video.Sampler counting its samplings and the probes
// asked of it (not those Sample makes itself).
type countingSampler struct {
	*video.Sampler
	samples, probes atomic.Int64
}

func (s *countingSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	s.samples.Add(1)
	return s.Sampler.Sample(ctx, path)
}

func (s *countingSampler) Probe(ctx context.Context, path string) (video.Info, error) {
	s.probes.Add(1)
	return s.Sampler.Probe(ctx, path)
}

// TestBuildVideoMetaUpgrade: an index whose iPhone clip was read before
// Apple's tags were (its date the UTC creation_time on the build's clock,
// no position) gets the camera's local date and New York from the next
// build, by a probe: no sampling, no model; a clip with no date keeps the
// file's time, as a new build gives it. The build after probes nothing.
func TestBuildVideoMetaUpgrade(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	src := []string{"-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=10", "-c:v", "libx264", "-preset", "ultrafast"}
	nye, plain := filepath.Join(dir, "nye.mov"), filepath.Join(dir, "plain.mp4")
	videotest.FFmpeg(t, tools, append(src, "-movflags", "use_metadata_tags",
		"-metadata", "creation_time=2023-01-01T01:30:00Z",
		"-metadata", "com.apple.quicktime.creationdate=2022-12-31T20:30:00-0500",
		"-metadata", "com.apple.quicktime.location.ISO6709=+40.7128-074.0060/", nye)...)
	videotest.FFmpeg(t, tools, append(src, plain)...)

	db := filepath.Join(t.TempDir(), "idx.db")
	e := &fakeEnc{}
	s := &countingSampler{Sampler: video.New(tools, video.Options{Interval: time.Second})}
	o := opts(e)
	o.Video, o.PreprocessFrame = s, fakeFramePre
	if _, err := Build(context.Background(), db, []string{dir}, o); err != nil {
		t.Fatal(err)
	}
	fresh, _ := readMetas(t, db)
	old := videoMeta(video.Info{Created: time.Date(2023, 1, 1, 1, 30, 0, 0, time.UTC), DisplayWidth: 160, DisplayHeight: 120}, 0)
	ageVideoMeta(t, db, map[string]store.Meta{nye: *old})
	samples, embeds := s.samples.Load(), e.calls.Load()

	if _, err := Build(context.Background(), db, []string{dir}, o); err != nil {
		t.Fatal(err)
	}
	got, _ := readMetas(t, db)
	var nyeFrames int
	for p, m := range got {
		v, _, _ := store.SplitFrame(p)
		if m != fresh[p] {
			t.Errorf("%s: metadata\n%+v, want what a new build gives\n%+v", p, m, fresh[p])
		}
		switch {
		case v == nye:
			nyeFrames++
			if m.City != "New York City" || m.Offset != -300 || m.Taken != time.Date(2022, 12, 31, 20, 30, 0, 0, time.UTC).Unix() {
				t.Errorf("%s: %+v, want 2022-12-31 20:30 -05:00 in New York", p, m)
			}
		case m.TakenSource != store.TakenMtime || m.HasGPS:
			t.Errorf("%s: %+v, want the file's time and no position", p, m)
		}
	}
	if nyeFrames == 0 || len(got) != len(fresh) {
		t.Errorf("%d records with metadata, %d of nye.mov; want %d", len(got), nyeFrames, len(fresh))
	}
	if s.samples.Load() != samples || e.calls.Load() != embeds || s.probes.Load() != 2 {
		t.Errorf("upgrade: %d samplings, %d encoder calls, %d probes; want only a probe of each video",
			s.samples.Load()-samples, e.calls.Load()-embeds, s.probes.Load())
	}
	if v := videoMetaVersionOf(t, db); v != videoMetaVersion {
		t.Errorf("version %d, want %d", v, videoMetaVersion)
	}
	if _, err := Build(context.Background(), db, []string{dir}, o); err != nil {
		t.Fatal(err)
	}
	if s.probes.Load() != 2 {
		t.Errorf("the build after the upgrade probed %d videos again", s.probes.Load()-2)
	}
}
