package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/index"
)

// TestOfflineResults: once a build found a folder's disk away, its records
// are still found (similar images from the stored vector), each marked
// with the offline folder, while their files are not served.
func TestOfflineResults(t *testing.T) {
	dir := photos(t)
	db := filepath.Join(t.TempDir(), "index.db")
	build(t, db, index.Options{}, dir)
	away := dir + ".away"
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil { // the bare mount point
		t.Fatal(err)
	}
	build(t, db, index.Options{}, dir)
	e := serveDB(t, db, nil)
	p := filepath.Join(dir, "wide_300x200.png")
	id := e.srv.ids.id(p)
	code, body, _ := e.get(t, "/api/similar?k=100&id="+id)
	if code != http.StatusOK {
		t.Fatalf("similar images of an offline record: %d %s, want 200", code, body)
	}
	var a Answer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(away)
	if len(a.Results) != len(ents) {
		t.Fatalf("similar images: %d results, want all %d records kept offline", len(a.Results), len(ents))
	}
	for _, r := range a.Results {
		if r.Offline != dir {
			t.Errorf("%s: offline %q, want %q", r.Path, r.Offline, dir)
		}
	}
	e.wantGone(t, p)
}
