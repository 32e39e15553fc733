package web

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/store"
)

// listings is the number of listings of the index the server began.
func (e *env) listings() uint64 {
	e.srv.ids.mu.Lock()
	defer e.srv.ids.mu.Unlock()
	return e.srv.ids.started
}

// writePNG writes a small PNG whose pixels seed sets.
func writePNG(t *testing.T, path string, seed int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i*seed*13 + seed*71)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLookupAfterCommitDoesNotList: every commit of a build made the next
// request by id hash every path of the index again, inside its read and
// holding off every other lookup (seconds a request at a million records,
// and a build beside the server ten times slower). An id the server
// answered is now found without a listing whatever was committed since;
// one it never answered costs one listing per state of the index.
func TestLookupAfterCommitDoesNotList(t *testing.T) {
	e := newEnv(t, nil)
	a := e.search(t, "/api/search?k=1000&q=photo")
	if len(a.Results) == 0 {
		t.Fatal("no results")
	}
	r := a.Results[0]
	// k=1: the answer holds the file itself, not the one added below.
	byID := []string{r.Thumb, r.Image, "/api/similar?k=1&id=" + r.ID}
	for _, p := range byID {
		if code, body, _ := e.get(t, p); code != http.StatusOK {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	extra := filepath.Join(e.dir, "extra.png")
	writePNG(t, extra, 1)
	build(t, e.db, index.Options{}, e.dir) // a commit: the index's state changes
	for _, p := range byID {
		if code, body, _ := e.get(t, p); code != http.StatusOK {
			t.Errorf("%s after a commit: %d %s", p, code, body)
		}
	}
	if n := e.listings(); n != 0 {
		t.Errorf("requests for answered ids listed the index %d times, want none", n)
	}

	// An id never answered (the file the build added) is found by one
	// listing, and known after it, across later commits.
	id := e.srv.ids.id(extra)
	if code, body, _ := e.get(t, "/thumb/"+id); code != http.StatusOK {
		t.Errorf("thumbnail of a file added by a build: %d %s", code, body)
	}
	if n := e.listings(); n != 1 {
		t.Errorf("an id never answered: %d listings, want 1", n)
	}
	writePNG(t, filepath.Join(e.dir, "extra2.png"), 2)
	build(t, e.db, index.Options{}, e.dir)
	if code, body, _ := e.get(t, "/thumb/"+id); code != http.StatusOK {
		t.Errorf("thumbnail of a listed file after a commit: %d %s", code, body)
	}
	if n := e.listings(); n != 1 {
		t.Errorf("a listed id after a commit: %d listings, want 1", n)
	}

	// An id of no record: one listing for a state not listed yet, none
	// for the same state again.
	const bogus = "AAAAAAAAAAAAAAAA"
	for i := range 2 {
		if code, body, _ := e.get(t, "/thumb/"+bogus); code != http.StatusNotFound {
			t.Errorf("thumbnail of an unknown id: %d %s, want 404", code, body)
		}
		if n := e.listings(); n != 2 {
			t.Errorf("unknown id, request %d: %d listings, want 2", i+1, n)
		}
	}
}

// BenchmarkLookupAfterCommit is a request's by-id read (open the index,
// find the id's record, close) on an index of n records, each one right
// after a commit; it reports the ratio of that time to the same read with
// no commit before it ("after-commit/idle"), which stays near 1 whatever
// n is: a commit does not make the next lookup hash every path again.
func BenchmarkLookupAfterCommit(b *testing.B) {
	for _, n := range []int{10_000, 300_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchLookupAfterCommit(b, n) })
	}
}

func benchLookupAfterCommit(b *testing.B, n int) {
	const dim = 32
	db := filepath.Join(b.TempDir(), "index.db")
	w, err := store.OpenWriter(db, store.Identity{Model: "bench-ids", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	vec := make([]float32, dim)
	vec[0] = 1
	put := func(batch *store.Batch, name string) {
		h := sha256.Sum256([]byte(name))
		batch.Put(name, store.File{Size: 1, Hash: h}, vec)
	}
	var batch store.Batch
	for i := range n {
		put(&batch, fmt.Sprintf("/bench/%09d.jpg", i))
		if batch.Len() == 1<<14 || i == n-1 {
			if err := w.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	s, err := New(Options{DB: db, Addr: "127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	// An answered id, as the page asks for the results a search gave.
	id := s.ids.answered([]string{fmt.Sprintf("/bench/%09d.jpg", n/2)})[0]
	lookup := func() time.Duration {
		start := time.Now()
		err := s.viewID(func(snap *store.Snapshot) error {
			_, _, err := s.indexed(snap, id)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	lookup()
	var after, idle time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		put(&batch, fmt.Sprintf("/bench/tick%09d.jpg", i))
		if err := w.Commit(&batch); err != nil {
			b.Fatal(err)
		}
		batch.Reset()
		b.StartTimer()
		after += lookup()
		b.StopTimer()
		idle += lookup()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(idle.Nanoseconds())/float64(b.N), "idle-ns/lookup")
	b.ReportMetric(float64(after)/float64(idle), "after-commit/idle")
	if l := s.ids.started; l != 0 {
		b.Fatalf("%d listings of the index for an answered id", l)
	}
}

// TestIDKeyIsTheID: an id decodes to the key its path hashes to.
func TestIDKeyIsTheID(t *testing.T) {
	m := &idMap{key: []byte("k")}
	for _, p := range []string{"/a.jpg", "/photos/été/b.png", "/x.tar#000001"} {
		id := m.id(p)
		if !validID(id) {
			t.Fatalf("id %q of %s is not valid", id, p)
		}
		got := m.answered([]string{p})[0]
		if got != id {
			t.Errorf("answered %s: %q, id %q", p, got, id)
		}
		if _, err := m.lookup("", nil, id); err != nil {
			t.Errorf("lookup of %s's id: %v", p, err)
		}
	}
}
