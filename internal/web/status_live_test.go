package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/index"
)

// scans is the number of times the server counted the index's Live
// Photo movies by reading its records.
func (e *env) scans() int {
	e.srv.live.mu.Lock()
	defer e.srv.live.mu.Unlock()
	return e.srv.live.scans
}

// TestStatusCountsLiveMoviesOncePerState: with failures in the index,
// every /api/status read all its records to tell its Live Photo movies
// from its failures (seconds at a million records), and the page asks
// for it every few seconds. The count is now made once per state of the
// index: polls between commits read no record, and a commit's changes
// are counted at the next poll.
func TestStatusCountsLiveMoviesOncePerState(t *testing.T) {
	dir := t.TempDir()
	livePair(t, dir, "IMG_0001")
	if err := os.WriteFile(filepath.Join(dir, "broken.jpg"), []byte("not a picture at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{dir: dir, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{}, dir)
	e.start(t, nil)
	status := func() Status {
		t.Helper()
		code, body, _ := e.get(t, "/api/status")
		if code != http.StatusOK {
			t.Fatalf("/api/status: %d %s", code, body)
		}
		var st Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("/api/status: %v in %s", err, body)
		}
		return st
	}
	const polls = 5
	for i := range polls {
		if st := status(); st.Failed != 1 || st.LiveVideos != 1 {
			t.Errorf("poll %d: %d failed, %d Live Photo movies; want 1 and 1", i+1, st.Failed, st.LiveVideos)
		}
	}
	if n := e.scans(); n != 1 {
		t.Errorf("%d polls of one state of the index counted its Live Photo movies %d times, want 1", polls, n)
	}

	// A commit that changes both counts.
	livePair(t, dir, "IMG_0002")
	if err := os.WriteFile(filepath.Join(dir, "broken2.jpg"), []byte("nor is this one"), 0o644); err != nil {
		t.Fatal(err)
	}
	build(t, e.db, index.Options{}, dir)
	for i := range polls {
		if st := status(); st.Failed != 2 || st.LiveVideos != 2 {
			t.Errorf("poll %d after a commit: %d failed, %d Live Photo movies; want 2 and 2", i+1, st.Failed, st.LiveVideos)
		}
	}
	if n := e.scans(); n != 2 {
		t.Errorf("%d polls of each of two states of the index counted its Live Photo movies %d times, want 2", polls, n)
	}
}
