package web

import (
	"bytes"
	"image"
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

// livePair writes a Live Photo (a JPEG still and its movie, one content
// identifier) named stem into dir and returns the still's path, the
// movie's and the movie's bytes.
func livePair(t *testing.T, dir, stem string) (still, movie string, data []byte) {
	t.Helper()
	const id = "7D7E7F70-0000-4000-8000-0000000000BB"
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 200, 30, 30, 255
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	still = filepath.Join(dir, stem+".JPG")
	if err := os.WriteFile(still, videotest.WithEXIF(buf.Bytes(), videotest.AppleEXIF(id, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	movie = filepath.Join(dir, stem+".MOV")
	data = videotest.LiveMovie(string(bytes.Repeat([]byte("motion "), 400)), video.ContentIDKey, id)
	if err := os.WriteFile(movie, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return still, movie, data
}

// rewrite writes b, of the same size, over the indexed file p and puts
// its recorded mtime back (rewriteKeepingStat): only its ctime tells.
func (e *env) rewrite(t *testing.T, p string, b []byte) {
	t.Helper()
	rec := e.recordOf(t, p)
	if int64(len(b)) != rec.Size {
		t.Fatalf("rewrite of %s: %d bytes, its record says %d", p, len(b), rec.Size)
	}
	rewriteKeepingStat(t, p, b, time.Unix(0, rec.MtimeNs), rec.CtimeNs)
}

// TestLiveMovieReplacedKeepingStat: a Live Photo's movie replaced by
// other bytes of its size, its mtime put back (a clip copied over it with
// cp -p, an edit by a tool that keeps the times), was served by /live as
// the indexed movie, and a client holding the old movie's ETag was told
// it still held it (304). The index holds no content hash of a Live movie
// (its record's hash is its still's stamp), so a moved ctime is a change
// until a build records the movie again; a still whose bytes changed the
// same way no longer names that movie either. /video answers the same
// 404 for a video that is no longer the one indexed.
func TestLiveMovieReplacedKeepingStat(t *testing.T) {
	dir := t.TempDir()
	still, movie, data := livePair(t, dir, "IMG_0001")
	e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{}, dir)
	if e.recordOf(t, movie).CtimeNs == 0 {
		t.Skip("this system records no ctime: size and mtime alone tell a change, as for a build")
	}
	e.start(t, nil)
	url := "/live/" + e.idOf(t, still)
	code, body, hdr := e.get(t, url)
	if code != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("the movie as indexed: %d, %d bytes of %d", code, len(body), len(data))
	}
	tag := hdr.Get("ETag")

	other := bytes.Clone(data)
	for i := len(other) - 200; i < len(other)-100; i++ {
		other[i] ^= 0x55 // inside the movie's payload: another clip of its size
	}
	e.rewrite(t, movie, other)
	code, body, _ = e.get(t, url)
	if code != http.StatusNotFound || !contains(body, errChanged.Error()) {
		t.Errorf("a movie replaced keeping its size and mtime: %d, %d bytes (the new file's: %v), want 404 saying it changed",
			code, len(body), bytes.Equal(body, other))
	}
	if code, body, _ = e.get(t, url, "If-None-Match", tag); code != http.StatusNotFound {
		t.Errorf("If-None-Match the indexed movie's ETag after the replacement: %d %q, want 404", code, body)
	}

	// The indexed bytes put back: nothing proves them the indexed ones
	// until a build has read the movie again.
	e.rewrite(t, movie, data)
	if code, _, _ = e.get(t, url); code != http.StatusNotFound {
		t.Errorf("a movie whose ctime moved, before a build: %d, want 404", code)
	}
	build(t, e.db, index.Options{}, dir)
	if code, body, _ = e.get(t, url); code != http.StatusOK || !bytes.Equal(body, data) {
		t.Errorf("the movie after the next build: %d, %d bytes", code, len(body))
	}

	// The still's bytes changed, its size and mtime kept: its content
	// hash no longer matches, so it names no movie.
	b, err := os.ReadFile(still)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0xff
	e.rewrite(t, still, b)
	if code, body, _ = e.get(t, url); code != http.StatusNotFound || !contains(body, errChanged.Error()) {
		t.Errorf("the movie of a still changed keeping its size and mtime: %d, %d bytes (the movie's: %v), want 404 saying it changed",
			code, len(body), bytes.Equal(body, data))
	}
}
