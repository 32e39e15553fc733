package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/store"
)

// TestDamagedIndexEndToEnd: an index cut short or overwritten with garbage
// once crashed every command (SIGBUS, or a bbolt panic while opening it
// for writing). Now status, search, forget and build say the index is
// damaged and name --reindex (exit 1), and build --reindex moves the file
// aside and builds a new one.
func TestDamagedIndexEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(root, "good.db")
	if _, errs, code := e2eRun(t, bin, "--db", good, "--model", model, "--device", "reference", "build", photos); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	orig, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:10000] }},
		{"garbage after the metas", func(b []byte) []byte {
			r := rand.New(rand.NewPCG(1, 2))
			for i := 8192; i < len(b); i++ {
				b[i] = byte(r.Uint32())
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "t.db")
			if err := os.WriteFile(db, tc.damage(append([]byte(nil), orig...)), 0o644); err != nil {
				t.Fatal(err)
			}
			g := []string{"--db", db, "--model", model, "--device", "reference"}
			for _, args := range [][]string{{"status"}, {"status", "--check"}, {"search", "a photo"}, {"forget", photos}, {"build", photos}} {
				_, errs, code := e2eRun(t, bin, append(g, args...)...)
				if code != 1 || !strings.Contains(errs, "index damaged") || !strings.Contains(errs, "--reindex") {
					t.Errorf("%v: exit %d, stderr %q; want exit 1, index damaged, --reindex", args, code, errs)
				}
			}
			_, errs, code := e2eRun(t, bin, append(g, "build", "--reindex", photos)...)
			if code != 0 || !strings.Contains(errs, ".corrupt-") {
				t.Fatalf("build --reindex: exit %d, stderr %q", code, errs)
			}
			if backups, _ := filepath.Glob(db + ".corrupt-*"); len(backups) != 1 {
				t.Errorf("backups %v, want one", backups)
			}
			if out, errs, code := e2eRun(t, bin, append(g, "status", "--check")...); code != 0 || !strings.Contains(out, "check:       ok") {
				t.Errorf("status --check after --reindex: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// TestBuildMissingRoots: a folder that does not exist is reported and
// skipped, the other folders are still built, and the exit status is 1.
// Only a folder the index holds entries under "no longer exists" (with the
// forget hint; its entries are kept offline); a typo simply "does not
// exist".
func TestBuildMissingRoots(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos, old := filepath.Join(root, "photos"), filepath.Join(root, "old")
	for _, d := range []string{photos, old} {
		if err := os.CopyFS(d, os.DirFS(filepath.Join(model, "images"))); err != nil {
			t.Fatal(err)
		}
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := e2eRun(t, bin, append(g, "build", old)...); code != 0 {
		t.Fatalf("build old: exit %d: %s", code, errs)
	}
	if err := os.RemoveAll(old); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(root, "typo")
	out, errs, code := e2eRun(t, bin, append(g, "build", "--json", typo, photos, old)...)
	var b buildJSON
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Added+b.Reused == 0 {
		t.Errorf("photos not built next to the missing folders: %v, %q", err, out)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(errs, typo+" does not exist") || strings.Contains(errs, "forget "+typo) {
		t.Errorf("stderr %q: want %s reported as not existing, without a forget hint", errs, typo)
	}
	if !strings.Contains(errs, old+" no longer exists") || !strings.Contains(errs, "clipidx forget "+old) {
		t.Errorf("stderr %q: want %s reported as gone, with the forget hint", errs, old)
	}
	if _, errs, code := e2eRun(t, bin, append(g, "build", typo)...); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Errorf("build of a typo alone: exit %d, stderr %q", code, errs)
	}
}

// TestStatusQueuedVectors: vectors queued for GC (a build killed before its
// GC) are not counted as distinct images but listed apart.
func TestStatusQueuedVectors(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "i.db")
	w, err := store.OpenWriter(db, store.Identity{Model: "fake", Dim: 4, Preprocess: "p"}, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	for i, name := range []string{"a", "b", "c"} {
		b.Put("/p/"+name, store.File{Hash: sha256.Sum256([]byte(name))}, []float32{1, float32(i), 0, 0})
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Delete("/p/c") // queued for GC, which never runs: as if killed
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out, errs, code := e2eRun(t, bin, "--db", db, "status")
	if code != 0 || !strings.Contains(out, "images:      2 (2 distinct)\n") || !strings.Contains(out, "unused:      1 vector no file uses") {
		t.Errorf("status: exit %d\n%s%s\nwant 2 images, 2 distinct, 1 unused vector", code, out, errs)
	}
}

// TestBuildMovedPhotoNotEmbeddedAgain: a photo moved from one folder to
// another, each folder then built on its own (old place first), is found
// again without running the model: the first build keeps its vector
// (status: unused), out of searches; the second reuses it; a build of
// every folder frees what no file uses.
func TestBuildMovedPhotoNotEmbeddedAgain(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	db := filepath.Join(t.TempDir(), "index.db")
	a, b := filepath.Join(root, "2019"), filepath.Join(root, "2020")
	if err := os.CopyFS(a, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(b, 0o755); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", db, "--model", model, "--device", "reference"}
	build := func(dir string) buildJSON {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(slices.Clone(g), "build", "--json", dir)...)
		var s buildJSON
		if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
			t.Fatalf("build %s: exit %d, %v: %s%s", dir, code, err, out, errs)
		}
		return s
	}
	status := func() (st struct {
		Images int `json:"images"`
		Unused int `json:"unused_vectors"`
	}) {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(slices.Clone(g), "status", "--json")...)
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
			t.Fatalf("status: exit %d, %v: %s%s", code, err, out, errs)
		}
		return st
	}
	first := build(root)
	if first.Added < 2 {
		t.Fatalf("first build: %+v, want the fixture's images", first)
	}
	entries, _ := os.ReadDir(a)
	moved := entries[0].Name()
	if err := os.Rename(filepath.Join(a, moved), filepath.Join(b, moved)); err != nil {
		t.Fatal(err)
	}
	if s := build(a); s.Removed != 1 || s.Added+s.Updated+s.Reused != 0 {
		t.Errorf("build of the old folder: %+v, want the moved photo removed", s)
	}
	if st := status(); st.Unused != 1 || st.Images != first.Added-1 {
		t.Errorf("status after the old folder's build: %+v, want %d images and 1 unused vector", st, first.Added-1)
	}
	// Out of searches, but a query by its content needs no model.
	out, errs, code := e2eRun(t, bin, "--db", db, "search", "--json", "-k", "100", "--image", filepath.Join(b, moved))
	if code != 0 || strings.Contains(out, filepath.Join(a, moved)) || strings.Contains(out, filepath.Join(b, moved)) {
		t.Errorf("search by the moved photo without a model: exit %d, %s%s; want results without it", code, out, errs)
	}
	if s := build(b); s.Reused != 1 || s.Added != 0 {
		t.Errorf("build of the new folder: %+v, want the moved photo reused, none embedded", s)
	}
	if st := status(); st.Unused != 0 || st.Images != first.Added {
		t.Errorf("status after the new folder's build: %+v, want %d images, none unused", st, first.Added)
	}
	if err := os.Remove(filepath.Join(b, moved)); err != nil {
		t.Fatal(err)
	}
	if s := build(root); s.Removed != 1 {
		t.Errorf("build of every folder: %+v, want the deleted photo removed", s)
	}
	if st := status(); st.Unused != 0 {
		t.Errorf("status after a build of every folder: %+v, want no unused vector", st)
	}
}

// TestBuildWithoutFolderTakesHiddenRoot: `clipidx build` with no folder
// builds a hidden folder indexed as a root of its own inside another
// root, which the walk of that root never enters: a photo new there is
// indexed (before, only the outermost roots were built).
func TestBuildWithoutFolderTakesHiddenRoot(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	hidden := filepath.Join(root, ".private")
	if err := os.CopyFS(hidden, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(hidden)
	if err != nil || len(entries) < 2 {
		t.Fatalf("fixture images: %v", err)
	}
	held := filepath.Join(t.TempDir(), entries[0].Name())
	if err := os.Rename(filepath.Join(hidden, entries[0].Name()), held); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(t.TempDir(), "index.db"), "--model", model, "--device", "reference"}
	build := func(args ...string) buildJSON {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(append(slices.Clone(g), "build", "--json"), args...)...)
		var s buildJSON
		if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
			t.Fatalf("build %v: exit %d, %v: %s%s", args, code, err, out, errs)
		}
		return s
	}
	build(hidden)
	build(root)
	// A photo new in the hidden folder.
	if err := os.Rename(held, filepath.Join(hidden, "new-"+entries[0].Name())); err != nil {
		t.Fatal(err)
	}
	if s := build(); s.Added != 1 {
		t.Errorf("build without a folder: %+v, want the new photo in %s added", s, hidden)
	}
}

// TestBuildInterruptedWhileWaiting: Ctrl-C on a build waiting for another
// one that holds the index exits 130 with the interrupted message, not
// "context canceled" and 1.
func TestBuildInterruptedWhileWaiting(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "index.db")
	g := []string{"--db", db, "--model", model, "--device", "reference"}
	if _, errs, code := e2eRun(t, bin, append(slices.Clone(g), "build", filepath.Join(model, "images"))...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	id := identityOf(t, db)
	w, err := store.OpenWriter(db, id, store.WriterOptions{Command: "clipidx build (test)"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd := exec.Command(bin, append(slices.Clone(g), "build", filepath.Join(model, "images"))...)
	cmd.Env = append(os.Environ(), "CLIPIDX_MODEL=", "CLIPIDX_DB=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		got.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "waiting: ") {
			cmd.Process.Signal(os.Interrupt)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(got.String(), "interrupted") || strings.Contains(got.String(), "context canceled") {
		t.Errorf("build stopped while waiting: %v, stderr:\n%s\nwant exit 130 and the interrupted message", err, got.String())
	}
}

// identityOf is the identity of the index at db.
func identityOf(t *testing.T, db string) store.Identity {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var id store.Identity
	if err := r.View(func(s *store.Snapshot) error { id = s.Identity(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}
