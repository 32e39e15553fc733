package video_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// mean is the mean RGB of a frame.
func mean(f video.Frame) (r, g, b float64) {
	n := float64(len(f.RGB) / 3)
	for i := 0; i+2 < len(f.RGB); i += 3 {
		r, g, b = r+float64(f.RGB[i]), g+float64(f.RGB[i+1]), b+float64(f.RGB[i+2])
	}
	return r / n, g / n, b / n
}

// dominant names the strongest channel of a frame.
func dominant(f video.Frame) string {
	r, g, b := mean(f)
	switch {
	case r > 2*g && r > 2*b:
		return "red"
	case g > 2*r && g > 2*b:
		return "green"
	case b > 2*r && b > 2*g:
		return "blue"
	}
	return "mixed"
}

// TestSampleCuts: solid colours cut at known times give a frame within one
// sampling interval of each cut, of the colour after it, and the frames of
// a still colour in between are dropped as duplicates.
func TestSampleCuts(t *testing.T) {
	tools := videotest.Tools(t)
	path := filepath.Join(t.TempDir(), "cuts.mp4")
	videotest.Cuts(t, tools, path, "320x240", 6, "red", "lime", "blue")
	opts := video.Options{Interval: 2 * time.Second}
	frames, info, err := video.New(tools, opts).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(info.Duration-18) > 0.2 || info.DisplayWidth != 320 || info.DisplayHeight != 240 {
		t.Errorf("info %+v, want 18 s at 320x240", info)
	}
	for _, cut := range []struct {
		at     float64
		colour string
	}{{0, "red"}, {6, "green"}, {12, "blue"}} {
		found := false
		for _, f := range frames {
			if f.Time >= cut.at && f.Time < cut.at+opts.Interval.Seconds() && dominant(f) == cut.colour {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s frame within %v after the cut at %g s", cut.colour, opts.Interval, cut.at)
		}
	}
	// Every 2 s of a still colour is a candidate; all but the first of
	// each colour are near-identical to the frame before.
	if len(frames) != 3 {
		t.Errorf("%d frames, want 3 (one a colour):%s", len(frames), times(frames))
	}
	all, _, err := video.New(tools, video.Options{Interval: 2 * time.Second, DupDiff: -1}).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 8 {
		t.Errorf("without the duplicate drop %d frames, want one at least every 2 s of 18:%s", len(all), times(all))
	}
	for i := 1; i < len(all); i++ {
		if gap := all[i].Time - all[i-1].Time; gap < 1-1e-6 || gap > 2+0.04+1e-6 {
			t.Errorf("frames at %g and %g s: want 1 to 2 s apart", all[i-1].Time, all[i].Time)
		}
	}
}

func times(fs []video.Frame) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(" " + strconv.FormatFloat(f.Time, 'f', 3, 64))
	}
	return b.String()
}

// TestSampleOrientation: a phone-style clip with a display matrix comes
// out as a player shows it, and non-square pixels are widened.
func TestSampleOrientation(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	// A red picture with a blue band along its top edge.
	plain := filepath.Join(dir, "plain.mp4")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "color=red:s=64x32:d=1,drawbox=x=0:y=0:w=64:h=8:color=blue:t=fill",
		"-c:v", "libx264", "-pix_fmt", "yuv444p", plain)
	rotated := filepath.Join(dir, "rotated.mp4")
	videotest.FFmpeg(t, tools, "-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90", rotated)
	s := video.New(tools, video.Options{})
	frames, info, err := s.Sample(context.Background(), rotated)
	if err != nil {
		t.Fatal(err)
	}
	// ffmpeg reads the tag as a display matrix turning the picture a
	// quarter counter-clockwise: the top band ends on the left.
	if info.Rotation != 270 || info.DisplayWidth != 32 || info.DisplayHeight != 64 {
		t.Fatalf("info %+v: want rotation 270, displayed 32x64", info)
	}
	f := frames[0]
	if f.Width != 32 || f.Height != 64 {
		t.Fatalf("frame %dx%d, want 32x64", f.Width, f.Height)
	}
	px := func(x, y int) []byte { i := (y*f.Width + x) * 3; return f.RGB[i : i+3] }
	if l, r := px(1, 32), px(30, 32); l[2] < 200 || l[0] > 60 || r[0] < 200 || r[2] > 60 {
		t.Errorf("left %v, right %v: want the blue band on the left of a red picture", l, r)
	}

	wide := filepath.Join(dir, "anamorphic.mp4")
	videotest.Bars(t, tools, wide, "320x240", 1, "-vf", "setsar=2/1")
	frames, info, err = s.Sample(context.Background(), wide)
	if err != nil {
		t.Fatal(err)
	}
	if info.SARNum != 2 || info.SARDen != 1 || frames[0].Width != 640 || frames[0].Height != 240 {
		t.Errorf("SAR %d:%d, frame %dx%d: want 2:1 shown at 640x240", info.SARNum, info.SARDen, frames[0].Width, frames[0].Height)
	}
	big := filepath.Join(dir, "big.mp4")
	videotest.Bars(t, tools, big, "1280x720", 1)
	frames, _, err = s.Sample(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	if frames[0].Width != 796 || frames[0].Height != 448 {
		t.Errorf("a 1280x720 frame came out %dx%d, want its shorter side brought to 448: 796x448", frames[0].Width, frames[0].Height)
	}
}

// TestSampleLongVideo: a ten-hour file keeps to the frame cap, and its
// frames span the whole of it.
func TestSampleLongVideo(t *testing.T) {
	tools := videotest.Tools(t)
	path := filepath.Join(t.TempDir(), "ten-hours.mp4")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc=s=32x32:r=1/5:d=36000", "-c:v", "libx264", "-preset", "ultrafast",
		"-g", "120", "-pix_fmt", "yuv420p", path)
	frames, info, err := video.New(tools, video.Options{MaxFrames: 20, DupDiff: -1}).Sample(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Duration < 35999 {
		t.Fatalf("duration %g s, want 36000", info.Duration)
	}
	if len(frames) > 20 || len(frames) < 15 {
		t.Errorf("%d frames, want at most the cap of 20 (and near it)", len(frames))
	}
	if last := frames[len(frames)-1].Time; last < 30000 {
		t.Errorf("last frame at %g s: the frames must span the ten hours", last)
	}
}

// TestSampleHostile: each odd or broken input is one named error.
func TestSampleHostile(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.mp4")
	videotest.Bars(t, tools, good, "320x240", 2)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	audio := filepath.Join(dir, "audio.m4a")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", audio)
	cases := []struct {
		name string
		path string
		opts video.Options
		want error
	}{
		{"zero length", write("empty.mp4", nil), video.Options{}, video.ErrNotVideo},
		{"truncated", write("cut.mp4", data[:len(data)/3]), video.Options{}, video.ErrNotVideo},
		{"not a video", write("text.mkv", []byte("hello, this is text\n")), video.Options{}, video.ErrNotVideo},
		{"audio only", audio, video.Options{}, video.ErrNoVideoStream},
		{"over the pixel limit", good, video.Options{MaxPixels: 320*240 - 1}, video.ErrTooLarge},
	}
	for _, c := range cases {
		_, _, err := video.New(tools, c.opts).Sample(context.Background(), c.path)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}
