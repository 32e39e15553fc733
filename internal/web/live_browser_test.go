package web

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestBrowserPlaysLivePhoto: in Chromium, a Live Photo's still shows a
// LIVE mark; its viewer shows the still with a button that plays the
// movie (fetched from /live/ID) in its place, and the still comes back
// when the movie ends.
func TestBrowserPlaysLivePhoto(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	tools := videotest.Tools(t)
	dir := t.TempDir()
	const id = "6A6B6C6D-0000-4000-8000-0000000000BB"
	// The still: a frame of ffmpeg's test source with an iPhone's EXIF.
	plain := filepath.Join(t.TempDir(), "still.jpg")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=160x120", "-frames:v", "1", plain)
	b, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "IMG_0001.JPG"), videotest.WithEXIF(b, videotest.AppleEXIF(id, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The movie: one second of VP9 (which every Chromium build plays) in
	// an MP4 container named as an iPhone names it, with the identifier.
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=1",
		"-c:v", "libvpx-vp9", "-deadline", "realtime", "-pix_fmt", "yuv420p", "-f", "mp4",
		"-movflags", "use_metadata_tags", "-metadata", video.ContentIDKey+"="+id, filepath.Join(dir, "IMG_0001.MOV"))
	e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{}, dir)
	e.start(t, nil)
	if a := e.search(t, "/api/search?q=a+photo"); len(a.Results) != 1 || a.Results[0].Live == "" {
		t.Fatalf("results %+v: want the still, with its movie", a.Results)
	}

	ctx := headless(t, exe, 120*time.Second, chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	waitFor := func(what, expr string) {
		t.Helper()
		waitPlayer(t, ctx, what, expr)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/?q=a+photo")); err != nil {
		t.Fatal(err)
	}
	waitFor("the LIVE mark", `(() => { const p = document.querySelector('#grid .cell .live'); return !!p && p.textContent === 'LIVE' })()`)
	if err := chromedp.Do(ctx, chromedp.Click("#grid .cell")); err != nil {
		t.Fatal(err)
	}
	waitFor("the still, and the button", `document.getElementById('viewer').open && !document.getElementById('full').hidden && document.getElementById('clip').hidden && !document.getElementById('live').hidden`)
	if err := chromedp.Do(ctx, chromedp.Click("#live")); err != nil {
		t.Fatal(err)
	}
	waitFor("the movie plays in place of the still", `(() => { const c = document.getElementById('clip'); return !c.hidden && document.getElementById('full').hidden && c.src.includes('/live/') && c.readyState >= 2 && !c.error })()`)
	waitFor("the still back once it ends", `document.getElementById('clip').ended && document.getElementById('clip').hidden && !document.getElementById('full').hidden`)
}
