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
	"github.com/clipidx/clipidx/store"
)

// TestBrowserPlaysLivePhoto: in Chromium, a Live Photo's still shows a
// LIVE mark; its viewer shows the still with a button that plays the
// movie (fetched from /live/ID) in its place, and the still comes back
// when the movie ends. A Motion Photo (its video inside the JPEG) gets
// the same button and a MOTION mark (the build recorded that it carries
// a video); one an older clipidx indexed (its record does not say) gets
// the button once the viewer has asked the server, and no mark.
func TestBrowserPlaysLivePhoto(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	tools := videotest.Tools(t)
	const id = "6A6B6C6D-0000-4000-8000-0000000000BB"
	tmp := t.TempDir()
	// The still: a frame of ffmpeg's test source; the motion: one second
	// of VP9 (which every Chromium build plays) in an MP4 container.
	plain := filepath.Join(tmp, "still.jpg")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=160x120", "-frames:v", "1", plain)
	motion := func(path string, extra ...string) {
		videotest.FFmpeg(t, tools, append(append([]string{"-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=1",
			"-c:v", "libvpx-vp9", "-deadline", "realtime", "-pix_fmt", "yuv420p", "-f", "mp4"}, extra...), path)...)
	}
	still, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	motionPhoto := func(dir string) error {
		mp4 := filepath.Join(dir, "..", filepath.Base(dir)+".mp4")
		motion(mp4)
		v, err := os.ReadFile(mp4)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "PXL_1.MP.jpg"), append(videotest.WithXMP(still, videotest.MotionXMP(len(v))), v...), 0o644)
	}
	for _, c := range []struct {
		name  string
		make  func(dir string) error
		mark  string
		older bool // the records as an older clipidx left them: not looked at for a video
	}{
		{"Live Photo", func(dir string) error {
			// The movie named as an iPhone names it, with the identifier.
			motion(filepath.Join(dir, "IMG_0001.MOV"), "-movflags", "use_metadata_tags", "-metadata", video.ContentIDKey+"="+id)
			return os.WriteFile(filepath.Join(dir, "IMG_0001.JPG"), videotest.WithEXIF(still, videotest.AppleEXIF(id, false)), 0o644)
		}, "LIVE", false},
		{"Motion Photo", motionPhoto, "MOTION", false},
		{"Motion Photo of an older index", motionPhoto, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.make(dir); err != nil {
				t.Fatal(err)
			}
			e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
			build(t, e.db, index.Options{}, dir)
			if c.older {
				forgetMotion(t, e.db)
			}
			e.start(t, nil)
			if a := e.search(t, "/api/search?q=a+photo"); len(a.Results) != 1 || (a.Results[0].Live == "") != c.older ||
				a.Results[0].Motion != (c.mark == "MOTION") || a.Results[0].MotionUnread != c.older {
				t.Fatalf("results %+v: want the still, with its movie's URL unless the index does not know it", a.Results)
			}

			ctx := headless(t, exe, 120*time.Second, chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
			waitFor := func(what, expr string) {
				t.Helper()
				waitPlayer(t, ctx, what, expr)
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/?q=a+photo")); err != nil {
				t.Fatal(err)
			}
			waitFor("the result", `document.querySelectorAll('#grid .cell').length === 1`)
			marks, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#grid .cell .live')].map((e) => e.textContent).join()`))
			if err != nil || marks != c.mark {
				t.Errorf("marks %q (%v), want %s", marks, err, c.mark)
			}
			if err := chromedp.Do(ctx, chromedp.Click("#grid .cell")); err != nil {
				t.Fatal(err)
			}
			waitFor("the still, and the button", `document.getElementById('viewer').open && !document.getElementById('full').hidden && document.getElementById('clip').hidden && !document.getElementById('live').hidden`)
			if err := chromedp.Do(ctx, chromedp.Click("#live")); err != nil {
				t.Fatal(err)
			}
			waitFor("the movie plays in place of the still", `(() => { const c = document.getElementById('clip'); return !c.hidden && document.getElementById('full').hidden && c.src.includes('/live/') && c.readyState >= 2 && !c.error })()`)
			waitFor("the still back once it ends", `document.getElementById('clip').ended && document.getElementById('clip').hidden && !document.getElementById('full').hidden`)
		})
	}
}

// forgetMotion rewrites the metadata of every record of the index at db
// as an older clipidx wrote it: not looked at for a Motion Photo's video.
func forgetMotion(t *testing.T, db string) {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]store.Meta{}
	var id store.Identity
	err = r.View(func(s *store.Snapshot) error {
		id = s.Identity()
		return s.EachMeta(func(p string, m store.Meta) error { ms[p] = m; return nil })
	})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.OpenWriter(db, id, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b store.Batch
	for p, m := range ms {
		m.Motion, m.MotionRead = false, false
		b.PutMeta(p, m)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
}
