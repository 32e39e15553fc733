package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestWatchKeepsForgetAndRebuildsLostIndex: `clipidx forget` of a watched
// folder that was renamed away (what the offline line advises) was undone
// by the watcher's next batch, which put the folder back among the index's
// folders, and then every rescan failed ("lstat ...: no such file") and a
// plain `clipidx build` failed too. Now the watcher leaves a forgotten
// root alone, saying so once. And an index removed under the watcher was
// refilled only with the paths that changed (2 of 9 photos) until the
// next rescan; it is built again whole.
func TestWatchKeepsForgetAndRebuildsLostIndex(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	keep, old, db := filepath.Join(root, "keep"), filepath.Join(root, "old"), filepath.Join(root, "index.db")
	for _, d := range []string{keep, old} {
		if err := os.CopyFS(d, os.DirFS(filepath.Join(model, "images"))); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(keep)
	n := len(entries)
	g := []string{"--db", db, "--model", model, "--device", "cpu"}
	cmd, stderr, next := startWatch(t, bin, g, keep, old)
	defer cmd.Process.Kill()
	next("first build")

	// The old folder goes (renamed away); forget it, as the offline line
	// says; then a change in the other folder.
	if err := os.Rename(old, old+".moved"); err != nil {
		t.Fatal(err)
	}
	next("the old folder gone")
	if _, errs, code := e2eRun(t, bin, append(g, "forget", old)...); code != 0 {
		t.Fatalf("forget: exit %d %s", code, errs)
	}
	copyFile(t, filepath.Join(keep, "checker_320x240.png"), filepath.Join(keep, "again.png"))
	next("a change beside the forgotten folder")
	if st := statusOf(t, bin, g); !slices.Equal(st.Folders, []string{keep}) {
		t.Errorf("folders after forget and a batch: %q, want only %s", st.Folders, keep)
	}
	if _, errs, code := e2eRun(t, bin, append(g, "build")...); code != 0 {
		t.Errorf("build of the indexed folders after forget: exit %d %s", code, errs)
	}
	if !strings.Contains(stderr.String(), old+" is no longer in the index") {
		t.Errorf("watch did not say it leaves the forgotten folder alone:\n%s", stderr.String())
	}

	// The index removed; a change: the index is built again whole.
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(keep, "gradient_256.png"), filepath.Join(keep, "again2.png"))
	if l := next("a change after the index was removed"); l.Changed != 0 {
		t.Errorf("after the index was removed: %+v, want a full build", l)
	}
	if st := statusOf(t, bin, g); st.Images != n+2 {
		t.Errorf("the index built again holds %d images, want %d", st.Images, n+2)
	}
}
