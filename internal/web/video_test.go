package web

import (
	"bytes"
	"context"
	"errors"
	"image"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestVideoServing: a video's frame is a result with its video's URL and
// time; /video/ID answers Range requests with the right bytes (206) and
// Content-Type; its thumbnail is made from an ffmpeg still; similar images
// work from it; a changed video is no longer served.
func TestVideoServing(t *testing.T) {
	tools := videotest.Tools(t)
	m := tiny(t)
	proc, err := m.Processor(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip.mov")
	videotest.Cuts(t, tools, clip, "160x120", 2, "red", "blue")
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
	a := e.search(t, "/api/search?q=a+colour")
	if len(a.Results) != 1 || a.Results[0].Video == "" || a.Results[0].Time == nil {
		t.Fatalf("results %+v: want the video once, with its URL and time", a.Results)
	}
	r := a.Results[0]
	if !strings.HasPrefix(r.Path, clip+"#t=") {
		t.Errorf("result %s, want a frame of %s", r.Path, clip)
	}
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	code, body, hdr := e.get(t, r.Video, "Range", "bytes=100-1099")
	if code != http.StatusPartialContent || hdr.Get("Content-Type") != "video/quicktime" || !bytes.Equal(body, data[100:1100]) {
		t.Errorf("range: %d %s, %d bytes (equal %v)", code, hdr.Get("Content-Type"), len(body), bytes.Equal(body, data[100:1100]))
	}
	code, body, _ = e.get(t, r.Video, "Range", "bytes=-10")
	if code != http.StatusPartialContent || !bytes.Equal(body, data[len(data)-10:]) {
		t.Errorf("suffix range: %d, %d bytes", code, len(body))
	}
	if code, body, _ = e.get(t, r.Video); code != http.StatusOK || !bytes.Equal(body, data) {
		t.Errorf("whole video: %d, %d bytes of %d", code, len(body), len(data))
	}
	if code, body, hdr = e.get(t, r.Thumb); code != http.StatusOK || hdr.Get("Content-Type") != "image/jpeg" || len(body) == 0 {
		t.Errorf("thumbnail: %d %s %d bytes", code, hdr.Get("Content-Type"), len(body))
	}
	if code, _, hdr = e.get(t, r.Image); code != http.StatusOK || hdr.Get("Content-Type") != "image/png" {
		t.Errorf("frame picture: %d %s", code, hdr.Get("Content-Type"))
	}
	// The same index served without ffmpeg: the frame's pictures are a
	// 404 that names ffmpeg, the video still plays.
	e2 := &env{dir: dir, db: e.db}
	e2.start(t, nil)
	a2 := e2.search(t, "/api/search?q=a+colour")
	if len(a2.Results) != 1 {
		t.Fatalf("without ffmpeg: results %+v, want the frame", a2.Results)
	}
	r2 := a2.Results[0]
	for _, u := range []string{r2.Thumb, r2.Image} {
		if code, body, _ := e2.get(t, u); code != http.StatusNotFound || !strings.Contains(string(body), "needs ffmpeg") {
			t.Errorf("without ffmpeg, %s: %d %s; want a 404 naming ffmpeg", u, code, body)
		}
	}
	if code, _, _ := e2.get(t, r2.Video); code != http.StatusOK {
		t.Errorf("without ffmpeg, the video: %d, want 200", code)
	}
	// ffmpeg failing on the recorded video: an answer that names no path.
	e3 := &env{dir: dir, db: e.db}
	e3.start(t, func(o *Options) {
		o.FrameStill = func(ctx context.Context, p string, at float64) ([]byte, error) {
			return nil, errors.New("ffmpeg failed: still of " + p)
		}
	})
	r3 := e3.search(t, "/api/search?q=a+colour").Results[0]
	if code, body, _ := e3.get(t, r3.Image); code != http.StatusInternalServerError || strings.Contains(string(body), dir) || !strings.Contains(string(body), "ffmpeg could not make") {
		t.Errorf("a still that fails: %d %s; want a 500 naming no path", code, body)
	}
	sim := e.search(t, "/api/similar?id="+r.ID)
	if len(sim.Results) == 0 || sim.Results[0].ID != r.ID {
		t.Errorf("similar from a frame: %+v", sim.Results)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(clip, later, later); err != nil {
		t.Fatal(err)
	}
	if code, _, _ = e.get(t, r.Video); code != http.StatusNotFound {
		t.Errorf("a video changed since the build: %d, want 404", code)
	}
}
