package web

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestLiveServing: a Live Photo's still is a result that carries its
// movie's URL (/live/ID, the still's id), which answers with the movie's
// bytes, Range requests included, and its Content-Type, no ffmpeg needed;
// a photo without a movie has none; the movie or the still changed since
// the build is no longer served.
func TestLiveServing(t *testing.T) {
	dir := t.TempDir()
	const id = "7D7E7F70-0000-4000-8000-0000000000AA"
	photo := func(name string, c color.RGBA, exif []byte) string {
		img := image.NewRGBA(image.Rect(0, 0, 64, 48))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, nil); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if exif != nil {
			b = videotest.WithEXIF(b, exif)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	still := photo("IMG_0001.JPG", color.RGBA{200, 30, 30, 255}, videotest.AppleEXIF(id, false))
	photo("IMG_0002.JPG", color.RGBA{30, 30, 200, 255}, videotest.AppleEXIF("", false))
	movie := filepath.Join(dir, "IMG_0001.MOV")
	data := videotest.LiveMovie(string(bytes.Repeat([]byte("motion "), 400)), video.ContentIDKey, id)
	if err := os.WriteFile(movie, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{}, dir) // no sampler: none is needed
	e.start(t, nil)

	a := e.search(t, "/api/search?q=a+photo")
	var r *Result
	for i, x := range a.Results {
		switch x.Path {
		case still:
			r = &a.Results[i]
		case movie:
			t.Errorf("the Live Photo's movie is a result: %+v", x)
		default:
			if x.Live != "" {
				t.Errorf("%s has a Live Photo movie %q", x.Path, x.Live)
			}
		}
	}
	if len(a.Results) != 2 || r == nil || r.Live != "/live/"+r.ID || r.Video != "" {
		t.Fatalf("results %+v: want both photos, the still with its movie's URL", a.Results)
	}
	code, body, hdr := e.get(t, r.Live)
	if code != http.StatusOK || hdr.Get("Content-Type") != "video/quicktime" || !bytes.Equal(body, data) {
		t.Errorf("movie: %d %s, %d bytes of %d", code, hdr.Get("Content-Type"), len(body), len(data))
	}
	code, body, _ = e.get(t, r.Live, "Range", "bytes=100-1099")
	if code != http.StatusPartialContent || !bytes.Equal(body, data[100:1100]) {
		t.Errorf("range: %d, %d bytes", code, len(body))
	}
	if code, _, _ = e.get(t, r.Live, "If-None-Match", hdr.Get("ETag")); code != http.StatusNotModified {
		t.Errorf("If-None-Match its ETag: %d, want 304", code)
	}
	if code, _, _ = e.get(t, "/live/"+a.Results[0].ID+"x"); code != http.StatusNotFound {
		t.Errorf("an id that is no id: %d, want 404", code)
	}
	for _, x := range a.Results {
		if x.Path != still {
			if code, _, _ = e.get(t, "/live/"+x.ID); code != http.StatusNotFound {
				t.Errorf("the movie of a photo without one: %d, want 404", code)
			}
		}
	}

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(movie, later, later); err != nil {
		t.Fatal(err)
	}
	if code, _, _ = e.get(t, r.Live); code != http.StatusNotFound {
		t.Errorf("a movie changed since the build: %d, want 404", code)
	}
	if err := os.Chtimes(movie, time.Unix(0, 0), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	build(t, e.db, index.Options{}, dir)
	if code, _, _ = e.get(t, r.Live); code != http.StatusOK {
		t.Errorf("the movie after the next build: %d, want 200", code)
	}
	if err := os.Chtimes(still, later, later); err != nil {
		t.Fatal(err)
	}
	if code, _, _ = e.get(t, r.Live); code != http.StatusNotFound {
		t.Errorf("a still changed since the build: %d, want 404", code)
	}
}

// TestMotionPhotoServing: a Motion Photo (a JPEG with an MP4 appended, as
// an Android phone writes it) is indexed as its still, its result marked
// (motion, and live: the URL of its video); /live/ID answers with its
// video (the appended bytes, Range requests included, as video/mp4), HEAD
// too, and 404 for a still without one.
func TestMotionPhotoServing(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	tmp := t.TempDir()
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=96x64", "-frames:v", "1", filepath.Join(tmp, "s.jpg"))
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=96x64:r=10:d=1", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", filepath.Join(tmp, "v.mp4"))
	jpg, err := os.ReadFile(filepath.Join(tmp, "s.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	mp4, err := os.ReadFile(filepath.Join(tmp, "v.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	motion := filepath.Join(dir, "PXL_20240601_101010123.MP.jpg")
	if err := os.WriteFile(motion, append(videotest.WithXMP(jpg, videotest.MotionXMP(len(mp4))), mp4...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain.jpg"), jpg, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{}, dir)
	e.start(t, nil)
	a := e.search(t, "/api/search?q=a+photo")
	if len(a.Results) != 2 {
		t.Fatalf("results %+v: want both photos", a.Results)
	}
	for _, r := range a.Results {
		url := "/live/" + r.ID
		if want := r.Path == motion; r.Motion != want || (r.Live == url) != want {
			t.Errorf("%s: motion %v, live %q; want motion %v", r.Path, r.Motion, r.Live, want)
		}
		if r.Path != motion {
			if code, _, _ := e.get(t, url); code != http.StatusNotFound {
				t.Errorf("the video of a plain JPEG: %d, want 404", code)
			}
			continue
		}
		code, body, hdr := e.get(t, url)
		if code != http.StatusOK || hdr.Get("Content-Type") != "video/mp4" || !bytes.Equal(body, mp4) {
			t.Errorf("the Motion Photo's video: %d %s, %d bytes (the MP4 is %d)", code, hdr.Get("Content-Type"), len(body), len(mp4))
		}
		code, body, _ = e.get(t, url, "Range", "bytes=10-109")
		if code != http.StatusPartialContent || !bytes.Equal(body, mp4[10:110]) {
			t.Errorf("range: %d, %d bytes", code, len(body))
		}
		req, _ := http.NewRequest(http.MethodHead, e.ts.URL+url, nil)
		res, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.ContentLength != int64(len(mp4)) {
			t.Errorf("HEAD: %d, length %d", res.StatusCode, res.ContentLength)
		}
	}
}
