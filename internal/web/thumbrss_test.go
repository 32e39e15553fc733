package web

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/internal/rss"
)

// BenchmarkThumbPeakRSS reports the peak resident set size of the process
// while a server makes 32 first thumbnails of 24 MP (6000x4000) JPEGs at
// once, its thumbnail cache empty: what `clipidx serve` needs when a page
// of new results opens. The photos are one image/jpeg picture made
// distinct by a comment segment each (32 contents, 32 decodes). The peak
// is reset after the setup (/proc/self/clear_refs), so it is the
// requests' own; "base-MiB" is the resident size they start from.
//
//	go test ./internal/web -run '^$' -bench ThumbPeakRSS -benchtime 1x
func BenchmarkThumbPeakRSS(b *testing.B) {
	const n, w, h = 32, 6000, 4000
	dir := b.TempDir()
	photo := photo24MP(w, h)
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("photo%02d.jpg", i))
		if err := os.WriteFile(p, withComment(photo, fmt.Sprintf("photo %d", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	photo = nil
	db := filepath.Join(b.TempDir(), "index.db")
	storeIndex(b, db, dir, paths...)
	b.ResetTimer()
	for range b.N {
		base, peak := thumbBurst(b, db, paths)
		b.ReportMetric(float64(base)/(1<<20), "base-MiB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	}
	b.ReportMetric(float64(cap(decodeSlots)), "decode-slots")
}

// thumbBurst serves db with an empty thumbnail cache, requests the
// thumbnails of paths all at once and returns the resident size before
// and the peak during the requests.
func thumbBurst(b *testing.B, db string, paths []string) (base, peak int64) {
	ts := httptest.NewUnstartedServer(nil)
	srv, err := New(Options{DB: db, Addr: ts.Listener.Addr().String(), ThumbDir: filepath.Join(b.TempDir(), "thumbs")})
	if err != nil {
		b.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	defer ts.Close()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak resident size: %v", err)
	}
	if base, err = rss.Current(); err != nil {
		b.Skip(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(paths))
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(ts.URL + "/thumb/" + srv.ids.id(p))
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("thumbnail of %s: %s", p, resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Error(err)
	}
	if peak, err = rss.Peak(); err != nil {
		b.Skip(err)
	}
	return base, peak
}

// photo24MP encodes a w x h picture with smooth gradients and fine
// texture, so that its JPEG has the size of a camera's (a few MB).
func photo24MP(w, h int) []byte {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := range h {
		for x := range w {
			img.Y[y*img.YStride+x] = uint8(x*200/w + (x*y)%23)
		}
	}
	for y := range h / 2 {
		for x := range w / 2 {
			img.Cb[y*img.CStride+x] = uint8(64 + y*128/(h/2))
			img.Cr[y*img.CStride+x] = uint8(64 + x*128/(w/2))
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// withComment returns the JPEG data with a comment segment (COM) after
// its start marker: other bytes, the same picture.
func withComment(data []byte, text string) []byte {
	seg := []byte{0xff, 0xfe, byte((len(text) + 2) >> 8), byte(len(text) + 2)}
	out := append([]byte{}, data[:2]...)
	out = append(out, seg...)
	out = append(out, text...)
	return append(out, data[2:]...)
}
