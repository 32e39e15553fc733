package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestBuildRetryFailedEndToEnd: an unchanged failure stays failed without
// being read again, and build --retry-failed reads it again.
func TestBuildRetryFailedEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos, db := filepath.Join(root, "photos"), filepath.Join(root, "index.db")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	checker, err := os.ReadFile(filepath.Join(model, "images", "checker_320x240.png"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"a.png": string(checker), "corrupt.jpg": "\xff\xd8\xff\xe0 not a JPEG", "notes.heic": "text"} {
		if err := os.WriteFile(filepath.Join(photos, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := func(flags ...string) buildJSON {
		t.Helper()
		args := append([]string{"--db", db, "--model", model, "--device", "reference", "build", "--json"}, flags...)
		out, errs, code := e2eRun(t, bin, append(args, photos)...)
		if code != 0 {
			t.Fatalf("build %v: exit %d: %s", flags, code, errs)
		}
		var b buildJSON
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatalf("build --json output %q: %v", out, err)
		}
		return b
	}
	if b := build(); b.Added != 1 || b.Failed != 2 {
		t.Fatalf("first build: %+v, want 1 added, 2 failed", b)
	}
	if b := build(); b.Unchanged != 3 || b.Failed != 0 {
		t.Errorf("second build: %+v, want all 3 unchanged", b)
	}
	if b := build("--retry-failed"); b.Unchanged != 1 || b.Failed != 2 {
		t.Errorf("build --retry-failed: %+v, want the 2 failures read again", b)
	}
}
