package main

import (
	"crypto/sha256"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
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
