package web

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// fixedText is a warm text tower that costs nothing: the benchmark then
// measures what the server adds to the text encode.
type fixedText struct {
	Model
	v []float32
}

func (f fixedText) Prepare(context.Context, bool, bool, bool) error { return nil }
func (f fixedText) Identity(exif bool) store.Identity {
	return store.Identity{Model: "bench-random", Dim: len(f.v), EXIF: exif}
}
func (f fixedText) EncodeTexts(texts []string) ([]float32, error) { return f.v, nil }

// BenchmarkAPISearch100k is GET /api/search (k=50) over HTTP on an index
// of 100,000 random 1024-dimensional vectors (ViT-H/14's size), with a
// text tower that answers at once: the time is the server's share (open
// the index, scan, re-rank, ids, JSON) on top of the text encode.
func BenchmarkAPISearch100k(b *testing.B) {
	const n, dim = 100_000, 1024
	db := filepath.Join(b.TempDir(), "index.db")
	w, err := store.OpenWriter(db, store.Identity{Model: "bench-random", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	var batch store.Batch
	for i := range n {
		h := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		batch.Put(fmt.Sprintf("/bench/%09d.jpg", i), store.File{Size: 1, Hash: h}, vec())
		if batch.Len() == 1<<14 || i == n-1 {
			if err := w.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	q := vec()
	// The reference: search.Search on a reader kept open (what the scan
	// costs), then the same search through the API.
	b.Run("direct", func(b *testing.B) {
		r, err := store.OpenReader(db, store.ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		report(b, latencies(b, func() {
			err := r.View(func(s *store.Snapshot) error {
				_, err := search.Search(s, q, search.Options{K: 50})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}))
	})
	b.Run("api", func(b *testing.B) {
		ts := httptest.NewUnstartedServer(nil)
		srv, err := New(Options{DB: db, Addr: ts.Listener.Addr().String(), OpenModel: func() (Model, error) { return fixedText{v: q}, nil }})
		if err != nil {
			b.Fatal(err)
		}
		ts.Config.Handler = srv
		ts.Start()
		defer ts.Close()
		get := func() {
			resp, err := http.Get(ts.URL + "/api/search?k=50&q=a+red+bicycle")
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("search: %v %v", err, resp)
			}
			resp.Body.Close()
		}
		get() // the model opens
		report(b, latencies(b, get))
	})
}

// latencies times each of b.N calls of fn.
// latencies times each of b.N calls of fn, and reports the process's CPU
// time per call (server and client together), which the load of a shared
// machine does not inflate as it does wall time.
func latencies(b *testing.B, fn func()) []float64 {
	lat := make([]float64, 0, b.N)
	cpu0 := processCPU()
	for b.Loop() {
		t0 := time.Now()
		fn()
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
	}
	if cpu := processCPU() - cpu0; cpu > 0 && len(lat) > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
	}
	return lat
}

func report(b *testing.B, lat []float64) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-ms")
}

// benchEnv serves a folder holding one 12-megapixel JPEG besides the
// fixture images.
func benchEnv(b *testing.B, thumbDir string) (*httptest.Server, string, string) {
	dir := photos(b)
	img := image.NewRGBA(image.Rect(0, 0, 4000, 3000))
	for y := 0; y < 3000; y++ {
		for x := 0; x < 4000; x++ {
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(x/16), byte(y/12), byte((x^y)&0xff), 0xff
		}
	}
	f, err := os.Create(filepath.Join(dir, "photo_12mp.jpg"))
	if err != nil {
		b.Fatal(err)
	}
	if err := jpeg.Encode(f, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	db := filepath.Join(b.TempDir(), "index.db")
	build(b, db, index.Options{}, dir)
	ts := httptest.NewUnstartedServer(nil)
	srv, err := New(Options{DB: db, Addr: ts.Listener.Addr().String(), ThumbDir: thumbDir})
	if err != nil {
		b.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	b.Cleanup(ts.Close)
	return ts, srv.ids.id(filepath.Join(dir, "photo_12mp.jpg")), db
}

func fetch(b *testing.B, url string) {
	resp, err := http.Get(url)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %v %v", url, err, resp)
	}
	resp.Body.Close()
}

// BenchmarkThumbCached is GET /thumb/ID of a 12-megapixel JPEG whose
// thumbnail is in the disk cache (the browser's own cache bypassed).
func BenchmarkThumbCached(b *testing.B) {
	ts, id, _ := benchEnv(b, b.TempDir())
	fetch(b, ts.URL+"/thumb/"+id)
	report(b, latencies(b, func() { fetch(b, ts.URL+"/thumb/"+id) }))
}

// BenchmarkThumbFirst12MP is the first GET /thumb/ID of a 12-megapixel
// JPEG: read, hash check, decode, shrink, encode (no cache).
func BenchmarkThumbFirst12MP(b *testing.B) {
	ts, id, _ := benchEnv(b, "")
	report(b, latencies(b, func() { fetch(b, ts.URL+"/thumb/"+id) }))
}
