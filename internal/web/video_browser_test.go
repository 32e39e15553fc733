package web

import (
	"context"
	"errors"
	"image"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestBrowserPlaysVideo: in Chromium, a video's result shows a play mark
// with its frame's time; opening it plays the video itself (fetched from
// /video/ID with Range requests) from that time, in place of the picture.
func TestBrowserPlaysVideo(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	tools := videotest.Tools(t)
	m := tiny(t)
	proc, err := m.Processor(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// WebM (VP9): a format every Chromium build plays.
	clip := filepath.Join(dir, "clip.webm")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "color=c=red:s=160x120:r=25:d=3",
		"-f", "lavfi", "-i", "color=c=blue:s=160x120:r=25:d=3",
		"-filter_complex", "[0:v][1:v]concat=n=2:v=1:a=0[v]", "-map", "[v]",
		"-c:v", "libvpx-vp9", "-deadline", "realtime", "-pix_fmt", "yuv420p", clip)
	e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{
		Video: video.New(tools, video.Options{}),
		PreprocessFrame: func(img image.Image) ([]float32, error) {
			if px := proc.Image(img); px != nil {
				return px, nil
			}
			return nil, errors.New("no pixels")
		},
	}, dir)
	e.start(t, func(o *Options) {
		o.FrameStill = func(ctx context.Context, p string, at float64) ([]byte, error) {
			return video.Still(ctx, tools, p, at, 1280)
		}
	})
	// A query whose best frame is not the first, so that starting from
	// the frame's time is seen (the tiny model's scores are arbitrary but
	// fixed).
	query, at := "", 0.0
	for _, q := range []string{"a colour", "blue", "the sea", "a blue wall", "sky", "a red car", "night", "water", "a flag", "paint"} {
		a := e.search(t, "/api/search?q="+strings.ReplaceAll(q, " ", "+"))
		if len(a.Results) != 1 || a.Results[0].Time == nil {
			t.Fatalf("results %+v: want the video once, with its time", a.Results)
		}
		if *a.Results[0].Time > 0 {
			query, at = q, *a.Results[0].Time
			break
		}
	}
	if query == "" {
		t.Fatal("no query of the list has a best frame after the first: change the list")
	}

	ctx := headless(t, exe, 120*time.Second, chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	waitFor := func(what, expr string) {
		t.Helper()
		waitPlayer(t, ctx, what, expr)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/?q="+strings.ReplaceAll(query, " ", "+"))); err != nil {
		t.Fatal(err)
	}
	waitFor("the result's play mark", `(() => { const p = document.querySelector('#grid .cell .play'); return !!p && p.textContent.startsWith('▶ ') })()`)
	mark, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#grid .cell .play').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0:" + pad2(int(at)); !strings.Contains(mark, want) {
		t.Errorf("play mark %q, want the frame's time %s", mark, want)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#grid .cell")); err != nil {
		t.Fatal(err)
	}
	waitFor("the viewer plays the video", `document.getElementById('viewer').open && !document.getElementById('clip').hidden && document.getElementById('full').hidden && document.getElementById('clip').readyState >= 2 && !document.getElementById('clip').error`)
	// Where playback began (its first played range), not where it is now.
	waitFor("from the frame's time", `(() => { const c = document.getElementById('clip'); return c.played.length > 0 && Math.abs(c.played.start(0) - `+strconv.FormatFloat(at, 'f', 3, 64)+`) < 0.5 })()`)
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
