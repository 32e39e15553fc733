package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// tinyModel opens the tiny fixture model once per test binary.
var (
	tinyOnce sync.Once
	tinyM    *clipnpu.Model
	tinyErr  error
)

func tiny(t testing.TB) face {
	t.Helper()
	dir := fixtures.TinyModel(t)
	tinyOnce.Do(func() {
		tinyM, tinyErr = clipnpu.Open(dir, clipnpu.OpenOptions{Options: clipnpu.Options{Device: "cpu"}, Lazy: true})
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return face{tinyM}
}

// face is the model face as the server and search take it: with the
// identity an index records made from the face's description (as
// cmd/clipidx does).
type face struct{ *clipnpu.Model }

func (f face) Identity(exif bool) store.Identity {
	d := f.Describe(exif)
	return store.Identity{Model: d.Name, WeightsHash: d.WeightsHash, Weights: d.Weights, Dim: d.Dim, Preprocess: d.Preprocess, EXIF: d.EXIF}
}

// viewOf opens db for each read, as the server does.
func viewOf(db string) search.View {
	return func(fn func(*store.Snapshot) error) error {
		r, err := store.OpenReader(db, store.ReaderOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		return r.View(fn)
	}
}

// photos copies the fixture images into a new folder and returns it.
func photos(t testing.TB) string {
	t.Helper()
	src := filepath.Join(fixtures.TinyModel(t), "images")
	dst := filepath.Join(t.TempDir(), "photos")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
	return dst
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// build indexes roots into db with the tiny model.
func build(t testing.TB, db string, opts index.Options, roots ...string) {
	t.Helper()
	m := tiny(t)
	proc, err := m.Processor(true)
	if err != nil {
		t.Fatal(err)
	}
	info := m.Info()
	if opts.Encoder == nil {
		opts.Encoder = m
	}
	opts.Preprocess = proc.Bytes
	opts.Identity = m.Identity(true)
	opts.PixelsPerImage = 3 * info.ImageSize * info.ImageSize
	if _, err := index.Build(context.Background(), db, roots, opts); err != nil {
		t.Fatal(err)
	}
}

// env is a server over a freshly built index of the fixture images.
type env struct {
	dir, db string
	srv     *Server
	ts      *httptest.Server
}

func newEnv(t *testing.T, edit func(*Options)) *env {
	t.Helper()
	e := &env{dir: photos(t)}
	e.db = filepath.Join(t.TempDir(), "index.db")
	build(t, e.db, index.Options{}, e.dir)
	e.start(t, edit)
	return e
}

func (e *env) start(t *testing.T, edit func(*Options)) {
	t.Helper()
	e.ts = httptest.NewUnstartedServer(nil)
	o := Options{
		DB:        e.db,
		Addr:      e.ts.Listener.Addr().String(),
		ThumbDir:  filepath.Join(t.TempDir(), "thumbs"),
		OpenModel: func() (Model, error) { return tiny(t), nil },
	}
	if edit != nil {
		edit(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	e.ts.Config.Handler = srv
	e.ts.Start()
	t.Cleanup(e.ts.Close)
}

// get fetches path and returns the status code and body.
func (e *env) get(t testing.TB, path string, hdr ...string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", e.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) (int, []byte, http.Header) {
	t.Helper()
	resp, err := http.DefaultTransport.RoundTrip(req) // no redirect following
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// raw sends a request line as it is (no client-side cleaning of the path)
// and returns the status code and Location header.
func (e *env) raw(t *testing.T, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, e.ts.Listener.Addr())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func (e *env) search(t testing.TB, path string) Answer {
	t.Helper()
	code, body, _ := e.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var a Answer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return a
}

// idOf returns the id the server gives path (from a search listing all).
func (e *env) idOf(t testing.TB, path string) string {
	t.Helper()
	a := e.search(t, "/api/search?k=1000&q=photo")
	for _, r := range a.Results {
		if r.Path == path {
			return r.ID
		}
	}
	t.Fatalf("%s not among the results", path)
	return ""
}

// port is the port the server listens on.
func (e *env) port() string {
	_, port, _ := net.SplitHostPort(e.ts.Listener.Addr().String())
	return port
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
