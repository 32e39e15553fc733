package web

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// size is the number of ids the map keeps.
func (m *idMap) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.known)
}

// TestIDMapBoundedUnderChurn: every id the server answered stayed in its
// map for the life of the process, so files added, found by a search and
// forgotten, build after build, grew it without end. Now it holds at
// most about twice the index's paths plus idSlack (and one answer), the
// ids of the files forgotten still answer 404, and those still indexed
// are found; the listings that trim it stay few (each follows at least
// idSlack new answered paths).
func TestIDMapBoundedUnderChurn(t *testing.T) {
	const (
		dim    = 8
		kept   = 50   // files indexed throughout
		cycles = 24   // commits that add K files, then forget them
		k      = 1000 // K
	)
	db := filepath.Join(t.TempDir(), "index.db")
	w, err := store.OpenWriter(db, store.Identity{Model: "churn", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	vec := make([]float32, dim)
	vec[0] = 1
	commit := func(names []string, forget bool) {
		t.Helper()
		var b store.Batch
		for _, n := range names {
			if forget {
				b.Delete(n)
			} else {
				b.Put(n, store.File{Size: 1, Hash: sha256.Sum256([]byte(n))}, vec)
			}
		}
		if err := w.Commit(&b); err != nil {
			t.Fatal(err)
		}
	}
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("/churn/%s/%06d.jpg", prefix, i)
		}
		return out
	}
	base := names("kept", kept)
	commit(base, false)
	s, err := New(Options{DB: db, Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	baseIDs := s.keep(base)
	lookup := func(id string) error {
		return s.viewID(func(snap *store.Snapshot) error {
			_, _, err := s.indexed(snap, id)
			return err
		})
	}

	var gone []string // an id of each cycle's forgotten files
	most := 0
	for c := range cycles {
		added := names(fmt.Sprint("c", c), k)
		commit(added, false)
		ids := s.keep(added) // a search that found them
		gone = append(gone, ids[c%k])
		commit(added, true)
		if n := s.ids.size(); n > most {
			most = n
		}
	}
	// Twice the most the index held (a listing may find a cycle's files
	// before their forgetting), idSlack, and one answer.
	if bound := 2*(kept+k) + idSlack + k; most > bound {
		t.Errorf("after %d commits adding and forgetting %d files each, the id map held up to %d ids, want at most %d", cycles, k, most, bound)
	}
	if n, most := s.ids.started, uint64(cycles*k/idSlack+1); n > most {
		t.Errorf("%d listings for %d answered paths, want at most %d", n, cycles*k, most)
	}
	for i, id := range gone {
		if err := lookup(id); !errors.Is(err, errGone) {
			t.Errorf("id of a forgotten file (cycle %d): %v, want errGone", i, err)
		}
	}
	for i, id := range baseIDs {
		if err := lookup(id); err != nil {
			t.Errorf("id of %s, indexed throughout: %v", base[i], err)
		}
	}
}
