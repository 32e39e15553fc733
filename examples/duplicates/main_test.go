package main

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

const dim = 16

// buildIndex writes an index holding files → vectors.
func buildIndex(t *testing.T, files map[string][]float32, copies map[string]string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "index.db")
	w, err := store.OpenWriter(db, store.Identity{Model: "test", Dim: dim, Preprocess: "test"}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b store.Batch
	for p, v := range files {
		b.Put(p, store.File{Size: 1, Hash: sha256.Sum256([]byte(p))}, v)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	for p, of := range copies { // identical bytes: the same hash, the vector reused
		b.Put(p, store.File{Size: 1, Hash: sha256.Sum256([]byte(of))}, nil)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	return db
}

func randomUnit(r *rand.Rand) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// nudge returns v plus a small perturbation (cosine about 0.99).
func nudge(r *rand.Rand, v []float32, eps float64) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = v[i] + float32(eps*r.NormFloat64())
	}
	return out
}

func TestGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	beach, cat := randomUnit(r), randomUnit(r)
	files := map[string][]float32{
		"/p/beach.jpg":      beach,
		"/p/beach_edit.jpg": nudge(r, beach, 0.15),
		"/p/beach_b.jpg":    nudge(r, beach, 0.15),
		"/p/cat.jpg":        cat,
		"/p/cat_2.jpg":      nudge(r, cat, 0.15),
		"/q/other.jpg":      randomUnit(r),
		"/q/another.jpg":    randomUnit(r),
	}
	db := buildIndex(t, files, map[string]string{"/q/cat_copy.jpg": "/p/cat.jpg"})

	var out, errb bytes.Buffer
	if err := run([]string{"-db", db, "-threshold", "0.9"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	got := parse(out.String())
	want := [][]string{
		{"/p/beach.jpg", "/p/beach_b.jpg", "/p/beach_edit.jpg"},
		{"/p/cat.jpg", "/q/cat_copy.jpg", "/p/cat_2.jpg"},
	}
	if len(got) != len(want) {
		t.Fatalf("groups:\n%s", out.String())
	}
	for i := range want {
		// The first path scores 1; the rest are sorted by score, so compare
		// as sets beyond the first.
		if got[i][0] != want[i][0] || !sameSet(got[i], want[i]) {
			t.Errorf("group %d = %v, want %v\n%s", i+1, got[i], want[i], out.String())
		}
	}
	// The byte-identical copy shares the cat's vector: cosine exactly 1.
	if !strings.Contains(out.String(), "  1.0000  /q/cat_copy.jpg") {
		t.Errorf("identical copy not at cosine 1:\n%s", out.String())
	}

	// -under /p leaves out /q/cat_copy.jpg: the cat group shrinks to two.
	out.Reset()
	if err := run([]string{"-db", db, "-threshold", "0.9", "-under", "/p"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if g := parse(out.String()); len(g) != 2 || len(g[1]) != 2 {
		t.Errorf("under /p: %v", g)
	}
	out.Reset()
	if err := run([]string{"-db", db, "-threshold", "0.999"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if g := parse(out.String()); len(g) != 1 || len(g[0]) != 2 {
		t.Errorf("threshold 0.999 should leave only the identical copy: %v", g)
	}
}

func parse(s string) [][]string {
	var groups [][]string
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "group "):
			groups = append(groups, nil)
		case strings.HasPrefix(l, "  ") && len(groups) > 0:
			f := strings.Fields(l)
			groups[len(groups)-1] = append(groups[len(groups)-1], f[len(f)-1])
		}
	}
	return groups
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
