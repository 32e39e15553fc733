//go:build unix

package search

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// TestSearchFileCutUnderIt: rewriting the index in place while `clipidx
// serve` searched it (a backup restored with cp onto it) killed the
// server. A scan worker read a page past the file's new end: SIGBUS, fatal
// on a goroutine without debug.SetPanicOnFault; and a fault in the exact
// re-rank, on the View's goroutine, was re-raised by store's guard, which
// only accepted bbolt's and store's frames. Here each search runs on a
// snapshot whose file is cut short under it: at the vectors' upper halves
// (the scan faults, with every kernel, exact and filtered too) or at their
// lower halves (the re-rank faults). Each must return an error saying the
// file changed, and the test binary must live.
func TestSearchFileCutUnderIt(t *testing.T) {
	const dim = 64
	orig := chunkLast(t, dim)
	const first, last = store.VecID(1), store.VecID(store.ChunkSlots)
	type cut struct {
		name  string
		lower bool // cut at the lower halves (else the upper)
		opts  Options
	}
	var cuts []cut
	for _, k := range ScanKernels() {
		cuts = append(cuts, cut{"scan " + k, false, Options{}})
	}
	cuts = append(cuts,
		cut{"exact scan", false, Options{Exact: true}},
		cut{"filtered scan", false, Options{Filter: Filter{Kinds: KindPhoto}}},
		cut{"re-rank", true, Options{}},
		cut{"re-rank of frames", true, Options{Frames: true}},
	)
	defer SetKernel("")
	for _, tc := range cuts {
		t.Run(tc.name, func(t *testing.T) {
			kernel := ""
			if k, ok := strings.CutPrefix(tc.name, "scan "); ok {
				kernel = k
			}
			if err := SetKernel(kernel); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "cut.db")
			data, err := os.ReadFile(orig)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rd, err := store.OpenReader(path, store.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			var res []Result
			err = rd.View(func(s *store.Snapshot) error {
				hi, lo, ok := s.VectorHalves(last)
				if !ok {
					t.Fatal("no vector in the last slot")
				}
				half := hi
				if tc.lower {
					half = lo
				}
				// The page after the first byte of the first slot's half:
				// the query's, the last slot's, lies well past it. (Only
				// the last slot's bytes are once in the file: the chunk's
				// version before it was filled lies in free pages.)
				at := offsetOnce(t, data, half) - int64((last-first)*dim*2)
				page := int64(os.Getpagesize())
				q := s.Vector(last)
				if err := os.Truncate(path, (at/page+1)*page); err != nil {
					t.Skipf("cannot cut a mapped file here: %v", err)
				}
				res, err = Search(s, q, tc.opts)
				return err
			})
			if err == nil {
				t.Fatalf("searched a file cut under the search: no error, %d results", len(res))
			}
			// It names the function that faulted: a search reading the
			// vectors, not store reading its records before the scan.
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "changed in place") || !strings.Contains(err.Error(), "search.") {
				t.Errorf("error %q; want the index changed in place or damaged, as search read it", err)
			}
			t.Log(err)
		})
	}
}

// TestGuardKeepsSearchBugsLoud: store's guard (View's, and Guard on a scan
// worker) turns a memory fault in search's code into an error, but a bug
// there, a bounds error or a nil dereference, must still crash loudly,
// not pass for a damaged index.
func TestGuardKeepsSearchBugsLoud(t *testing.T) {
	rd, err := store.OpenReader(fill(t, 20, 8, 1), store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, bug := range []struct {
		name string
		fn   func()
	}{
		{"bounds error", func() { unpack(make([]float32, 8), store.Chunk{}, 0, 8) }},
		{"nil dereference", func() { (*hiQuery)(nil).scoreRows(nil, nil) }},
	} {
		for _, g := range []struct {
			name string
			run  func(fn func()) error
		}{
			{"View", func(fn func()) error { return rd.View(func(*store.Snapshot) error { fn(); return nil }) }},
			{"Guard", func(fn func()) error { return store.Guard(func() error { fn(); return nil }) }},
		} {
			var err error
			p := func() (p any) {
				defer func() { p = recover() }()
				err = g.run(bug.fn)
				return nil
			}()
			if _, ok := p.(runtime.Error); !ok || err != nil {
				t.Errorf("%s in search under %s: recovered %v, returned %v; want the panic through", bug.name, g.name, p, err)
			}
		}
	}
}

// offsetOnce is where b lies in data, which holds it exactly once.
func offsetOnce(t *testing.T, data, b []byte) int64 {
	t.Helper()
	at := bytes.Index(data, b)
	if at < 0 || bytes.Index(data[at+1:], b) >= 0 {
		t.Fatal("the vector's bytes are not once in the file")
	}
	return int64(at)
}

// chunkLast writes an index of one full chunk, laid out so that the
// pages a search reads before the vectors (the root bucket's, the
// chunks bucket's) lie before them in the file. bbolt puts the pages of
// a commit where its free list has room, or at the end: the commit that
// fills the last slot rewrites the chunk, too large for the pages freed,
// at the end, and the next commit, which adds a duplicate path only,
// rewrites the root bucket into the free pages before it.
func chunkLast(t *testing.T, dim int) string {
	t.Helper()
	path := fill(t, store.ChunkSlots-1, dim, 3)
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b store.Batch
	b.Put("/last.jpg", store.File{Hash: sha256.Sum256([]byte("last"))}, randVec(rand.New(rand.NewPCG(4, 4)), dim, 1))
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Put("/dup/last.jpg", store.File{Hash: sha256.Sum256([]byte("last"))}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	return path
}
