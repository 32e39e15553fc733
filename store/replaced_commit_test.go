package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCommitFollowsReplacedFile: a commit that waits for the index's lock
// while another process replaces the file (a compaction or merge run on
// the index by another name, a link, whose build lock is not the
// writer's) lands in the new file. It went to the old one, unlinked by
// the rename, and was lost.
func TestCommitFollowsReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Size: 1, Hash: hashOf("a")}, vec(1, testID.Dim))
	commit(t, w, &b)

	// A reader's shared lock, as a compaction holds on the file it copies.
	ro, err := openBolt(path, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var b Batch
		b.Put("/p/b.jpg", File{Size: 2, Hash: hashOf("b")}, vec(2, testID.Dim))
		done <- w.Commit(&b)
	}()
	time.Sleep(300 * time.Millisecond) // the commit waits for the lock
	select {
	case err := <-done:
		t.Fatalf("the commit did not wait for the shared lock: %v", err)
	default:
	}
	// The copy is renamed over the index, then the old file let go of.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".merge-1"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	closeDB(ro)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
	view(t, path, func(s *Snapshot) {
		for _, p := range []string{"/p/a.jpg", "/p/b.jpg"} {
			if _, ok, err := s.File(p); err != nil || !ok {
				t.Errorf("%s not in the index after the commit (%v): the commit went to the replaced file", p, err)
			}
		}
	})
}
