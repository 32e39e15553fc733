package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestWatchIndexInsideWatchedFolder: with the index kept in the folder
// it watches, each batch's commit raised the events of the next batch
// (the index, its lock, its gate), for ever, and a file no build reads
// (a catalog's journal) ran a batch with each write. Now a batch follows
// only a change the build can index: after the first build, each batch
// is of the one photo copied in.
func TestWatchIndexInsideWatchedFolder(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	photos := filepath.Join(t.TempDir(), "Photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(photos, "clipidx.db")
	g := []string{"--db", db, "--model", model, "--device", "cpu"}
	cmd, _, next := startWatch(t, bin, g, photos)
	defer cmd.Process.Kill()
	if l := next("first build"); l.Changed != 0 {
		t.Fatalf("first build: %+v, want a full build", l)
	}
	for i, src := range []string{"checker_320x240.png", "gradient_256.png"} {
		journal := filepath.Join(photos, "catalog.lrcat-journal")
		if err := os.WriteFile(journal, []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(photos, "copy-"+src)
		copyFile(t, filepath.Join(photos, src), dst)
		l := next("a photo copied")
		if l.Changed != 1 || l.Added+l.Reused != 1 {
			t.Fatalf("after copy %d: batch %+v, want one of the copied photo, adding it", i, l)
		}
		if st := statusOf(t, bin, g); st.LastBuild == nil || !slices.Equal(st.LastBuild.Within, []string{dst}) {
			t.Errorf("after copy %d: last build %+v, want it within the copy", i, st.LastBuild)
		}
	}
}
