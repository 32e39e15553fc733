package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// holdModel holds the model at one stage until release is closed: the
// load (Prepare), the text pass or the image pass. It records the context
// Prepare was given and how many texts were embedded.
type holdModel struct {
	Model
	at      string        // "load", "text" or "image"
	held    chan struct{} // receives a value when a stage starts holding
	release chan struct{}

	mu    sync.Mutex
	ctx   context.Context // the context of the last Prepare
	texts atomic.Int64    // texts embedded
}

func newHold(at string) *holdModel {
	return &holdModel{at: at, held: make(chan struct{}, 4), release: make(chan struct{})}
}

func (h *holdModel) hold(stage string) {
	if h.at == stage {
		h.held <- struct{}{}
		<-h.release
	}
}

func (h *holdModel) Prepare(ctx context.Context, text, image, exif bool) error {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	h.hold("load")
	return h.Model.Prepare(ctx, text, image, exif)
}

func (h *holdModel) EncodeTexts(texts []string) ([]float32, error) {
	h.hold("text")
	h.texts.Add(int64(len(texts)))
	return h.Model.EncodeTexts(texts)
}

func (h *holdModel) EncodeImages(px []float32, n int) ([]float32, error) {
	h.hold("image")
	return h.Model.EncodeImages(px, n)
}

func (h *holdModel) prepared() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ctx
}

// waitHeld waits for the model to reach its held stage.
func (h *holdModel) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(60 * time.Second):
		t.Fatalf("the request never reached the model's %s stage", h.at)
	}
}

// newJPEG is an image that is not in the index.
func newJPEG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30)), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// reply is what a request sent in the background got.
type reply struct {
	code int
	body string
	err  error
}

// send sends req in the background.
func send(req *http.Request) chan reply {
	c := make(chan reply, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			c <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		c <- reply{code: resp.StatusCode, body: b.String()}
	}()
	return c
}

// commit adds one record to the index at db, waiting at most two seconds
// for the index's lock, as a build's commit does.
func commit(t *testing.T, db string, id store.Identity, path string) error {
	t.Helper()
	w, err := store.OpenWriter(db, id, store.WriterOptions{Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer w.Close()
	v := make([]float32, id.Dim)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	var b store.Batch
	b.Put(path, store.File{Size: 1, Hash: sha256.Sum256([]byte(path))}, v)
	return w.Commit(&b)
}

// TestBuildCommitsWhileModelRuns: while a request's model work is held
// (an upload's image pass, a text query's model load), a build's commit
// goes through within two seconds, and the request, once released, ranks
// the index as it is after the commit. While a model worked inside the
// index's read session, the commit waited for it (ErrBusy here).
func TestBuildCommitsWhileModelRuns(t *testing.T) {
	for _, tc := range []struct {
		at  string
		req func(e *env) *http.Request
	}{
		{"image", func(e *env) *http.Request {
			req, _ := http.NewRequest("POST", e.ts.URL+"/api/search/image?k=100", bytes.NewReader(newJPEG(t)))
			return req
		}},
		{"load", func(e *env) *http.Request {
			req, _ := http.NewRequest("GET", e.ts.URL+"/api/search?k=100&q=stripes", nil)
			return req
		}},
	} {
		t.Run(tc.at, func(t *testing.T) {
			hm := newHold(tc.at)
			e := newEnv(t, func(o *Options) {
				o.OpenModel = func() (Model, error) { hm.Model = tiny(t); return hm, nil }
			})
			got := send(tc.req(e))
			hm.waitHeld(t)
			added := filepath.Join(e.dir, "committed.png")
			start := time.Now()
			err := commit(t, e.db, tiny(t).Identity(true), added)
			took := time.Since(start)
			close(hm.release)
			t.Logf("the commit took %v while the model's %s stage was held", took.Round(time.Millisecond), tc.at)
			if err != nil {
				t.Fatalf("a commit while the model's %s stage is held: %v after %v", tc.at, err, took.Round(time.Millisecond))
			}
			r := <-got
			if r.err != nil || r.code != 200 {
				t.Fatalf("the held request: %d %s %v", r.code, r.body, r.err)
			}
			if !strings.Contains(r.body, `"path":"`+added+`"`) {
				t.Errorf("the held request ranked the index as it was before the commit: %s", r.body)
			}
		})
	}
}

// observed wraps the server so a test knows when a request's handler has
// returned (the client may be gone long before).
func observed(e *env) (*httptest.Server, chan struct{}) {
	done := make(chan struct{}, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.ServeHTTP(w, r)
		done <- struct{}{}
	}))
	return ts, done
}

// TestDisconnectCancelsModelWork: a client that goes away while the model
// works cancels the context the model was prepared with, and the query
// stops at the next stage: of ten texts (two passes) only the first pass
// is embedded; an upload's held image pass ends the request.
func TestDisconnectCancelsModelWork(t *testing.T) {
	words := make([]string, 10)
	for i := range words {
		words[i] = fmt.Sprintf("+word%d", i)
	}
	for _, tc := range []struct {
		at   string
		req  func(ctx context.Context, base string) *http.Request
		want int64 // texts embedded
	}{
		{"text", func(ctx context.Context, base string) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/search?q="+url.QueryEscape(strings.Join(words, " ")), nil)
			return req
		}, search.TextPass},
		{"image", func(ctx context.Context, base string) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/search/image", bytes.NewReader(newJPEG(t)))
			return req
		}, 0},
	} {
		t.Run(tc.at, func(t *testing.T) {
			hm := newHold(tc.at)
			e := newEnv(t, func(o *Options) {
				o.OpenModel = func() (Model, error) { hm.Model = tiny(t); return hm, nil }
			})
			ts, done := observed(e)
			defer ts.Close()
			ctx, cancel := context.WithCancel(context.Background())
			req := tc.req(ctx, ts.URL)
			req.Host = e.ts.Listener.Addr().String()
			got := send(req)
			hm.waitHeld(t)
			cancel()
			if r := <-got; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("the client's request: %+v, want cancelled", r)
			}
			select {
			case <-hm.prepared().Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the model's context was not cancelled when the client went away")
			}
			close(hm.release)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the request's handler did not return after its client went away")
			}
			if n := hm.texts.Load(); n != tc.want {
				t.Errorf("%d texts embedded after the client went away, want %d", n, tc.want)
			}
		})
	}
}
