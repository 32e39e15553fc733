package video_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// shortGOP and longGOP are x264 options for a keyframe every 25 frames (1 s
// at 25 fps) or every 250 (10 s), scene-cut keyframes off so that the
// keyframes fall on whole seconds whatever the picture.
var (
	shortGOP = []string{"-g", "25", "-x264-params", "scenecut=0"}
	longGOP  = []string{"-g", "250", "-x264-params", "scenecut=0"}
)

// whole reports whether t is a whole number of seconds (a keyframe time
// of a shortGOP clip).
func whole(t float64) bool { return math.Abs(t-math.Round(t)) < 1e-6 }

// TestSampleKeyframes: a clip with a keyframe every second and cuts between
// keyframes is sampled from its keyframes only: each cut is found at the
// first keyframe after it (within one GOP), with the keyframe's own time,
// and the interval and gap rules hold on keyframe times.
func TestSampleKeyframes(t *testing.T) {
	tools := videotest.Tools(t)
	path := filepath.Join(t.TempDir(), "phone-gop.mp4")
	videotest.CutsWith(t, tools, path, "320x240", 6.4, shortGOP, "red", "lime", "blue")
	frames, info, err := video.New(tools, video.Options{}).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !info.KeyframesOnly || math.Abs(info.KeyframeGap-1) > 1e-3 {
		t.Fatalf("keyframes only %v, gap %g s: want the keyframe path for a 1 s GOP", info.KeyframesOnly, info.KeyframeGap)
	}
	for _, cut := range []struct {
		at     float64
		colour string
	}{{0, "red"}, {6.4, "green"}, {12.8, "blue"}} {
		found := false
		for _, f := range frames {
			if f.Time >= cut.at && f.Time <= cut.at+1 && dominant(f) == cut.colour {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s frame within one GOP (1 s) after the cut at %g s:%s", cut.colour, cut.at, times(frames))
		}
	}
	for _, f := range frames {
		if !whole(f.Time) {
			t.Errorf("frame at %g s: not a keyframe's time (whole seconds)", f.Time)
		}
	}
	if len(frames) != 3 {
		t.Errorf("%d frames, want 3 (one a colour):%s", len(frames), times(frames))
	}

	// The interval and the gap count keyframe times.
	all, info, err := video.New(tools, video.Options{Interval: 2 * time.Second, DupDiff: -1}).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !info.KeyframesOnly || len(all) < 9 {
		t.Fatalf("keyframes only %v, %d frames: want one at least every 2 s of 19.2:%s", info.KeyframesOnly, len(all), times(all))
	}
	for i, f := range all {
		if !whole(f.Time) {
			t.Errorf("frame at %g s: not a keyframe's time", f.Time)
		}
		if i > 0 {
			if gap := f.Time - all[i-1].Time; gap < 1-1e-6 || gap > 2+1e-6 {
				t.Errorf("frames at %g and %g s: want 1 to 2 s apart", all[i-1].Time, f.Time)
			}
		}
	}

	// KeyframeMax negative decodes every frame: the cuts at their own time.
	full, info, err := video.New(tools, video.Options{KeyframeMax: -1}).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if info.KeyframesOnly || info.KeyframeGap != 0 {
		t.Errorf("keyframes only %v, gap %g with KeyframeMax -1: want every frame decoded, nothing read", info.KeyframesOnly, info.KeyframeGap)
	}
	if len(full) != 3 || math.Abs(full[1].Time-6.4) > 1e-3 || math.Abs(full[2].Time-12.8) > 1e-3 {
		t.Errorf("every frame decoded:%s, want 0 6.4 12.8", times(full))
	}
}

// TestSampleLongGOP: a clip with a keyframe every 10 s takes the full
// path: every frame decoded, the cuts found at their own time.
func TestSampleLongGOP(t *testing.T) {
	tools := videotest.Tools(t)
	path := filepath.Join(t.TempDir(), "stream-gop.mp4")
	videotest.CutsWith(t, tools, path, "320x240", 6.4, longGOP, "red", "lime", "blue")
	frames, info, err := video.New(tools, video.Options{}).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if info.KeyframesOnly || info.KeyframeGap < 9.9 {
		t.Fatalf("keyframes only %v, gap %g s: want every frame decoded for a 10 s GOP", info.KeyframesOnly, info.KeyframeGap)
	}
	want := []struct {
		at     float64
		colour string
	}{{0, "red"}, {6.4, "green"}, {12.8, "blue"}}
	if len(frames) != len(want) {
		t.Fatalf("%d frames:%s, want 0 6.4 12.8", len(frames), times(frames))
	}
	for i, w := range want {
		if math.Abs(frames[i].Time-w.at) > 1e-3 || dominant(frames[i]) != w.colour {
			t.Errorf("frame %d: %s at %g s, want %s at %g s", i, dominant(frames[i]), frames[i].Time, w.colour, w.at)
		}
	}
}

// TestSampleKeyframesOrientation: on the keyframe path frames still come
// as a player shows them: rotation and sample aspect applied.
func TestSampleKeyframesOrientation(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.mp4")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "color=red:s=64x32:r=25:d=3,drawbox=x=0:y=0:w=64:h=8:color=blue:t=fill",
		"-c:v", "libx264", "-pix_fmt", "yuv444p", "-g", "25", plain)
	rotated := filepath.Join(dir, "rotated.mp4")
	videotest.FFmpeg(t, tools, "-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", rotated)
	s := video.New(tools, video.Options{Interval: time.Second, DupDiff: -1})
	frames, info, err := s.Sample(context.Background(), rotated)
	if err != nil {
		t.Fatal(err)
	}
	if !info.KeyframesOnly || info.Rotation != 270 {
		t.Fatalf("keyframes only %v, rotation %d: want the keyframe path of a turned clip", info.KeyframesOnly, info.Rotation)
	}
	if len(frames) != 3 {
		t.Errorf("%d frames:%s, want the 3 keyframes 0 1 2", len(frames), times(frames))
	}
	for _, f := range frames {
		if f.Width != 32 || f.Height != 64 {
			t.Fatalf("frame at %g s is %dx%d, want 32x64", f.Time, f.Width, f.Height)
		}
		px := func(x, y int) []byte { i := (y*f.Width + x) * 3; return f.RGB[i : i+3] }
		if l, r := px(1, 32), px(30, 32); l[2] < 200 || l[0] > 60 || r[0] < 200 || r[2] > 60 {
			t.Errorf("frame at %g s: left %v, right %v: want the blue band on the left of a red picture", f.Time, l, r)
		}
	}

	wide := filepath.Join(dir, "anamorphic.mp4")
	videotest.Bars(t, tools, wide, "320x240", 2, "-vf", "setsar=2/1", "-g", "25")
	frames, info, err = s.Sample(context.Background(), wide)
	if err != nil {
		t.Fatal(err)
	}
	if !info.KeyframesOnly || len(frames) == 0 || frames[0].Width != 640 || frames[0].Height != 240 {
		t.Errorf("keyframes only %v, %d frames: want the keyframe path, shown at 640x240", info.KeyframesOnly, len(frames))
	}
}
