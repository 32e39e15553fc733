package search

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// fakeEncoder embeds texts and images as fixed vectors, runs during (a
// hook, called before each model stage) and records what it was asked.
type fakeEncoder struct {
	dim    int
	model  string
	during func(stage string)

	ctx    context.Context // Prepare's
	text   bool            // Prepare's kinds
	image  bool
	passes []int    // texts per EncodeTexts call
	files  []string // image files embedded
}

func (f *fakeEncoder) Prepare(ctx context.Context, text, image, exif bool) error {
	f.ctx, f.text, f.image = ctx, text, image
	f.during("load")
	return nil
}

func (f *fakeEncoder) Identity(exif bool) store.Identity {
	return store.Identity{Model: f.model, Dim: f.dim, EXIF: exif}
}

func (f *fakeEncoder) EncodeTexts(texts []string) ([]float32, error) {
	f.during("text")
	f.passes = append(f.passes, len(texts))
	out := make([]float32, len(texts)*f.dim)
	for i := range texts {
		out[i*f.dim+i%f.dim] = 1
	}
	return out, nil
}

func (f *fakeEncoder) EncodeImageFile(path string) ([]float32, error) {
	f.during("image")
	f.files = append(f.files, path)
	v := make([]float32, f.dim)
	v[1] = 1
	return v, nil
}

// viewPath opens the index at path for each read, as the commands do.
func viewPath(path string) View {
	return func(fn func(*store.Snapshot) error) error {
		r, err := store.OpenReader(path, store.ReaderOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		return r.View(fn)
	}
}

// TestQueryRunsModelWithIndexClosed: at every model stage (load, text
// pass, image file) a build's commit gets the index's lock within a
// second; an image term whose content is indexed takes its stored vector
// and only the other is embedded; the ranking sees the commits.
func TestQueryRunsModelWithIndexClosed(t *testing.T) {
	const dim = 8
	db := fill(t, 40, dim, 1)
	dir := t.TempDir()
	stored, fresh := filepath.Join(dir, "stored.jpg"), filepath.Join(dir, "fresh.jpg")
	os.WriteFile(stored, []byte("5"), 0o644) // fill hashed "5" for /d2/f5.jpg
	os.WriteFile(fresh, []byte("not indexed"), 0o644)
	commits := 0
	enc := &fakeEncoder{dim: dim, model: "fake"}
	enc.during = func(stage string) {
		w, err := store.OpenWriter(db, store.Identity{Model: "fake", Dim: dim}, store.WriterOptions{Timeout: time.Second, NoSync: true})
		if err == nil {
			var b store.Batch
			b.Put(fmt.Sprintf("/added/%s.jpg", stage), store.File{Size: 1, Hash: sha256.Sum256([]byte("5"))}, nil)
			err = w.Commit(&b)
			w.Close()
		}
		if err != nil {
			t.Errorf("a commit during the model's %s stage: %v", stage, err)
		}
		commits++
	}
	terms := []Term{{Weight: 1, Text: "cat"}, {Weight: 1, Image: stored}, {Weight: 1, Image: fresh}}
	res, err := Query(context.Background(), viewPath(db), terms, func() (Encoder, error) { return enc, nil }, Options{K: 100})
	if err != nil {
		t.Fatal(err)
	}
	if commits != 3 || !enc.text || !enc.image || len(enc.files) != 1 || enc.files[0] != fresh {
		t.Errorf("%d commits; prepared text %v image %v; embedded %q (want only %s)", commits, enc.text, enc.image, enc.files, fresh)
	}
	added := 0
	for _, r := range res {
		if strings.HasPrefix(r.Path, "/added/") {
			added++
		}
	}
	if len(res) != 40+4+3 || added != 3 {
		t.Errorf("%d results, %d of them committed during the model run; want %d and 3", len(res), added, 40+4+3)
	}
}

// TestQueryStopsBetweenTextPasses: a query cancelled during its first
// text pass embeds no further pass and returns the context's error; the
// encoder was prepared with that context.
func TestQueryStopsBetweenTextPasses(t *testing.T) {
	const dim = 8
	db := fill(t, 20, dim, 2)
	ctx, cancel := context.WithCancel(context.Background())
	enc := &fakeEncoder{dim: dim, model: "fake", during: func(stage string) {
		if stage == "text" {
			cancel()
		}
	}}
	var terms []Term
	for i := range 2*TextPass + 1 {
		terms = append(terms, Term{Weight: 1, Text: fmt.Sprint("word", i)})
	}
	_, err := Query(ctx, viewPath(db), terms, func() (Encoder, error) { return enc, nil }, Options{})
	if !errors.Is(err, context.Canceled) || len(enc.passes) != 1 || enc.passes[0] != TextPass || enc.ctx != ctx {
		t.Errorf("cancelled in the first pass: %v, passes %v, prepared with the query's context %v", err, enc.passes, enc.ctx == ctx)
	}
	// Cancelled before: the model is not even asked for.
	asked := false
	_, err = Query(ctx, viewPath(db), terms, func() (Encoder, error) { asked = true; return enc, nil }, Options{})
	if !errors.Is(err, context.Canceled) || asked {
		t.Errorf("cancelled before the model: %v, model asked for %v", err, asked)
	}
}

// TestQueryIndexChanged: an index rebuilt for another model while the
// model ran is not ranked with a vector made for the old one; an encoder
// of another model is refused before it embeds anything.
func TestQueryIndexChanged(t *testing.T) {
	const dim = 8
	db := fill(t, 20, dim, 3)
	enc := &fakeEncoder{dim: dim, model: "fake", during: func(stage string) {
		if stage != "text" {
			return
		}
		w, err := store.OpenWriter(db, store.Identity{Model: "other", Dim: dim}, store.WriterOptions{Reindex: true, Timeout: time.Second, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}}
	terms := []Term{{Weight: 1, Text: "cat"}}
	if _, err := Query(context.Background(), viewPath(db), terms, func() (Encoder, error) { return enc, nil }, Options{}); !errors.Is(err, ErrIndexChanged) {
		t.Errorf("index rebuilt during the model run: %v, want ErrIndexChanged", err)
	}
	// The index is now "other"'s: the "fake" encoder is refused.
	enc.passes = nil
	if _, err := Query(context.Background(), viewPath(db), terms, func() (Encoder, error) { return enc, nil }, Options{}); !errors.Is(err, store.ErrModelMismatch) || enc.passes != nil {
		t.Errorf("encoder of another model: %v after %d passes, want ErrModelMismatch before any", err, len(enc.passes))
	}
}
