package search

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// fill writes n vectors near a few cluster centres (so that many scores
// are close and the 16-bit approximation really reorders candidates) to a
// fresh index and returns its path. File i is "/d<i%3>/f<i>.jpg"; every
// 10th file also has a duplicate "/dup/f<i>.jpg".
func fill(t testing.TB, n, dim int, seed uint64) string { return fillSpread(t, n, dim, seed, 0.02) }

// fillSpread is fill with noise of the given scale around the centres.
func fillSpread(t testing.TB, n, dim int, seed uint64, spread float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := rand.New(rand.NewPCG(seed, 1))
	centres := make([][]float32, 4)
	for c := range centres {
		centres[c] = randVec(r, dim, 1)
	}
	var b store.Batch
	for i := range n {
		v := randVec(r, dim, spread)
		for j := range v {
			v[j] += centres[i%4][j]
		}
		h := sha256.Sum256(fmt.Appendf(nil, "%d", i))
		b.Put(fmt.Sprintf("/d%d/f%d.jpg", i%3, i), store.File{Hash: h}, v)
		if i%10 == 0 {
			b.Put(fmt.Sprintf("/dup/f%d.jpg", i), store.File{Hash: h}, nil)
		}
		if b.Len() >= 5000 {
			if err := w.Commit(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	return path
}

func randVec(r *rand.Rand, dim int, scale float64) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// testQuery is query qi of a test: random, and for even qi near stored
// vector 1+qi, so that many scores are close.
func testQuery(r *rand.Rand, s *store.Snapshot, dim, qi int) []float32 {
	q := randVec(r, dim, 1)
	if qi%2 == 0 {
		v := s.Vector(store.VecID(1 + qi))
		for i := range q {
			q[i] = v[i] + 0.01*q[i]
		}
	}
	return q
}

func within(t testing.TB, path string, fn func(s *store.Snapshot)) {
	t.Helper()
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := rd.View(func(s *store.Snapshot) error { fn(s); return nil }); err != nil {
		t.Fatal(err)
	}
}

// reference is the plain exhaustive float32 scan: every vector, dot32,
// full sort; paths expanded like Search.
func reference(s *store.Snapshot, q []float32, k int) []Result {
	q, _ = unit(q)
	var all []Result
	s.Files("", func(p string, f store.File) error {
		all = append(all, Result{Path: p, ID: f.Vec, Score: dot32(q, s.Vector(f.Vec))})
		return nil
	})
	slices.SortFunc(all, func(a, b Result) int {
		switch {
		case a.Score != b.Score:
			if a.Score > b.Score {
				return -1
			}
			return 1
		case a.ID != b.ID:
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return all[:min(k, len(all))]
}

func TestSearchMatchesExhaustiveFloat32(t *testing.T) {
	const dim = 64
	path := fill(t, 3000, dim, 7)
	r := rand.New(rand.NewPCG(3, 3))
	within(t, path, func(s *store.Snapshot) {
		for qi := range 20 {
			q := testQuery(r, s, dim, qi)
			for _, k := range []int{1, 10, 57} {
				want := reference(s, q, k)
				for _, threads := range []int{1, 3} {
					for _, exact := range []bool{false, true} {
						got, err := Search(s, q, Options{K: k, Threads: threads, Exact: exact})
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("query %d k=%d threads=%d exact=%v:\n got %v\nwant %v", qi, k, threads, exact, got, want)
						}
					}
				}
			}
		}
	})
}

func TestSearchFilters(t *testing.T) {
	const dim = 16
	path := fill(t, 200, dim, 9)
	within(t, path, func(s *store.Snapshot) {
		q := s.Vector(1)
		all, _ := Search(s, q, Options{K: 1000})
		if len(all) != 220 {
			t.Fatalf("K=1000 returned %d results, want all 220 files", len(all))
		}
		if all[0].Score < 0.9999 || (all[0].Path != "/d0/f0.jpg" && all[0].Path != "/dup/f0.jpg") {
			t.Errorf("best match %v, want file 0 itself", all[0])
		}
		if all[1].Score != all[0].Score || all[1].ID != all[0].ID {
			t.Errorf("duplicate of the best match not listed second: %v", all[:2])
		}
		under, _ := Search(s, q, Options{K: 1000, Under: []string{"/d1"}})
		if len(under) != 67 {
			t.Errorf("under /d1: %d results, want 67", len(under))
		}
		for _, r := range under {
			if filepath.Dir(r.Path) != "/d1" {
				t.Errorf("under /d1 returned %s", r.Path)
			}
		}
		th := float32(0.5)
		above, _ := Search(s, q, Options{K: 1000, Threshold: &th})
		n := 0
		for _, r := range all {
			if r.Score >= th {
				n++
			}
		}
		if len(above) != n || n == 0 || n == len(all) {
			t.Errorf("threshold kept %d, want %d (of %d)", len(above), n, len(all))
		}
		if _, err := Search(s, q[:3], Options{}); err == nil {
			t.Error("wrong query length accepted")
		}
	})
}

func TestDotHi(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	lengths := []int{1024, 1025, 1031}
	for n := range 80 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		q := randVec(r, n, 1)
		v := randVec(r, n, 1)
		hi := make([]byte, 2*n+6) // guard bytes must not be read into the sum
		for i := range hi {
			hi[i] = 0x7f
		}
		var want float64
		for i := range v {
			h, _ := store.Split(v[i])
			hi[2*i], hi[2*i+1] = byte(h), byte(h>>8)
			want += float64(q[i]) * float64(math.Float32frombits(uint32(h)<<16))
		}
		got, gen := dotHi(hi, q), dotHiGeneric(hi, q)
		if math.Abs(float64(got)-want) > 1e-4*(1+math.Abs(want)) || math.Abs(float64(gen)-want) > 1e-4*(1+math.Abs(want)) {
			t.Errorf("n=%d: dotHi=%g dotHiGeneric=%g want %g (avx2 %v)", n, got, gen, want, useAVX2)
		}
	}
}

func TestErrorBoundHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const dim = 1024
	for range 2000 {
		q, _ := unit(randVec(r, dim, 1))
		v, _ := unit(randVec(r, dim, 1))
		// Adversarial-ish: a vector close to q, where the errors align.
		if r.IntN(2) == 0 {
			for i := range v {
				v[i] = q[i] + 0.001*v[i]
			}
			v, _ = unit(v)
		}
		hi := make([]byte, 2*dim)
		for i := range v {
			h, _ := store.Split(v[i])
			hi[2*i], hi[2*i+1] = byte(h), byte(h>>8)
		}
		if d := math.Abs(float64(dotHi(hi, q) - dot32(q, v))); d > errorBound(1, dim) {
			t.Fatalf("|approx-exact| = %g over bound %g", d, errorBound(1, dim))
		}
	}
}

func BenchmarkSearch100k(b *testing.B) {
	const dim = 1024
	path := fillSpread(b, 100000, dim, 1, 10) // nearly uniform on the sphere
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	q := randVec(rand.New(rand.NewPCG(1, 1)), dim, 1)
	for _, exact := range []bool{false, true} {
		b.Run(fmt.Sprintf("exact=%v", exact), func(b *testing.B) {
			rd.View(func(s *store.Snapshot) error {
				for b.Loop() {
					if _, err := Search(s, q, Options{Exact: exact}); err != nil {
						b.Fatal(err)
					}
				}
				return nil
			})
		})
	}
}

// TestSearchSkipsVectorsWithoutFiles: vectors whose files were deleted but
// that wait for the build's GC (or a crashed build) must not take places
// in the top k.
func TestSearchSkipsVectorsWithoutFiles(t *testing.T) {
	const dim = 16
	path := fill(t, 200, dim, 11)
	var q []float32
	within(t, path, func(s *store.Snapshot) { q = s.Vector(1) }) // file 0's vector
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: dim}, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Delete file 0 (and its copy) and every file of the same cluster up to
	// 40: the best matches of q lose their files; no GC runs.
	var b store.Batch
	deleted := map[string]bool{"/dup/f0.jpg": true}
	for i := 0; i <= 40; i += 4 {
		p := fmt.Sprintf("/d%d/f%d.jpg", i%3, i)
		b.Delete(p)
		deleted[p] = true
	}
	b.Delete("/dup/f0.jpg")
	b.Delete("/dup/f20.jpg")
	b.Delete("/dup/f40.jpg")
	deleted["/dup/f20.jpg"], deleted["/dup/f40.jpg"] = true, true
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	within(t, path, func(s *store.Snapshot) {
		for _, k := range []int{1, 10, 50} {
			for _, exact := range []bool{false, true} {
				got, err := Search(s, q, Options{K: k, Exact: exact})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != k {
					t.Errorf("k=%d exact=%v: %d results, want %d", k, exact, len(got), k)
				}
				for _, r := range got {
					if deleted[r.Path] {
						t.Errorf("deleted file %s returned", r.Path)
					}
				}
			}
		}
	})
}

// TestTopkFloor: dropping scores under floor() before push, as scan does,
// keeps exactly what pushing every score keeps (ties and near misses
// included).
func TestTopkFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, window := range []float32{0, 0.01, 0.2} {
		for _, k := range []int{1, 3, 10} {
			all, cut := topk{k: k, window: window}, topk{k: k, window: window}
			for i := range 2000 {
				// Coarse scores, so that ties and window edges occur.
				c := cand{id: store.VecID(i + 1), score: float32(r.IntN(1000)) / 1000}
				all.push(c)
				if c.score >= cut.floor() {
					cut.push(c)
				}
			}
			key := func(a, b cand) int {
				if better(a, b) {
					return -1
				}
				if better(b, a) {
					return 1
				}
				return 0
			}
			got, want := cut.all(), all.all()
			slices.SortFunc(got, key)
			slices.SortFunc(want, key)
			// The extra list is pruned at different moments, so compare
			// what survives the final floor, as Search's re-rank does
			// (computed here, not by the floor under test).
			f := all.heap[0].score - window
			got = slices.DeleteFunc(got, func(c cand) bool { return c.score < f })
			want = slices.DeleteFunc(want, func(c cand) bool { return c.score < f })
			if !slices.Equal(got, want) {
				t.Errorf("window %g k %d: with the floor %d kept, without %d", window, k, len(got), len(want))
			}
		}
	}
}

// TestSearchUnderShard checks that Under a tar shard keeps its samples
// (SHARD.tar#KEY), as export and forget do, and nothing else.
func TestSearchUnderShard(t *testing.T) {
	const dim = 8
	path := filepath.Join(t.TempDir(), "s.db")
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 5))
	var b store.Batch
	paths := []string{"/w/a.tar#0001", "/w/a.tar#0002", "/w/a.tarx#0001", "/w/b.tar#0001", "/w/a.tar.jpg", "/v/c.jpg"}
	for _, p := range paths {
		b.Put(p, store.File{Hash: sha256.Sum256([]byte(p))}, randVec(r, dim, 1))
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	within(t, path, func(s *store.Snapshot) {
		for _, tc := range []struct {
			under []string
			want  []string
		}{
			{[]string{"/w/a.tar"}, []string{"/w/a.tar#0001", "/w/a.tar#0002"}},
			{[]string{"/w/a.tar", "/v"}, []string{"/v/c.jpg", "/w/a.tar#0001", "/w/a.tar#0002"}},
			{[]string{"/w"}, []string{"/w/a.tar#0001", "/w/a.tar#0002", "/w/a.tar.jpg", "/w/a.tarx#0001", "/w/b.tar#0001"}},
		} {
			res, err := Search(s, randVec(r, dim, 1), Options{K: 100, Under: tc.under})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range res {
				got = append(got, x.Path)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("under %v: %v, want %v", tc.under, got, tc.want)
			}
		}
	})
}

// TestSearchLeavesOutDamagedVector: a bit flipped in the index file where
// a vector's upper halves lie made that vector score 57 against a query
// near it, first of every search, until status --check was run. Now it is
// left out of the results and its path is told to Options.Damaged, in
// every way a search ranks: plain, exact, filtered, and by video.
func TestSearchLeavesOutDamagedVector(t *testing.T) {
	const dim = 32
	path := fill(t, 300, dim, 9)
	const victim = store.VecID(7)
	var hi []byte
	var q []float32
	within(t, path, func(s *store.Snapshot) {
		h, _, ok := s.VectorHalves(victim)
		if !ok {
			t.Fatal("no vector 7")
		}
		hi = slices.Clone(h)
		q = s.Vector(victim)
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, hi)
	if at < 0 || bytes.Index(data[at+1:], hi) >= 0 {
		t.Fatal("the vector's upper halves are not once in the file")
	}
	data[at+1] = 0x60 // component 0's exponent: about 2^65, of q[0]'s sign
	if q[0] < 0 {
		data[at+1] |= 0x80
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Exact: true}, {Frames: true}, {Filter: Filter{Kinds: KindPhoto}}} {
		var told []string
		o.Damaged = func(paths []string) { told = append(told, paths...) }
		within(t, path, func(s *store.Snapshot) {
			res, err := Search(s, q, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) == 0 {
				t.Fatalf("%+v: no results", o)
			}
			for _, r := range res {
				if r.ID == victim || r.Score > 1.001 {
					t.Errorf("%+v: result %s (vector %d) scored %g", o, r.Path, r.ID, r.Score)
				}
			}
		})
		if !slices.Contains(told, "/d0/f6.jpg") {
			t.Errorf("%+v: Damaged was told %q, want the damaged vector's file", o, told)
		}
	}
}
