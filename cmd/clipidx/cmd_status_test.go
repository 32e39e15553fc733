package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestStatusFailedPathBytes: status --failed --json gives the exact bytes
// of a failed file's path that is not UTF-8 (as search --json does); the
// text output prints the path as it is.
func TestStatusFailedPathBytes(t *testing.T) {
	model := fixtures.TinyModel(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	bad, good := filepath.Join(photos, "bad\xff\xfename.jpg"), filepath.Join(photos, "broken.jpg")
	for _, p := range []string{bad, good} {
		if err := os.WriteFile(p, []byte("not a JPEG"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(g, "build", photos)...); code != 0 && code != 1 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	out, errs, code := runCLI(t, "--db", g[1], "status", "--failed", "--json")
	var list []struct {
		Path      string
		PathBytes []byte `json:"path_bytes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Fatalf("status --failed --json: exit %d %s %s", code, out, errs)
	}
	for _, f := range list {
		var want []byte // omitted for a UTF-8 path
		if f.Path != good {
			want = []byte(bad)
		}
		if !bytes.Equal(f.PathBytes, want) {
			t.Errorf("%q: path_bytes %q, want %q", f.Path, f.PathBytes, want)
		}
	}
	if strings.Count(out, `"path_bytes"`) != 1 {
		t.Errorf("status --failed --json: %s; want path_bytes on the one path that is not UTF-8", out)
	}
	if text, _, _ := runCLI(t, "--db", g[1], "status", "--failed"); !strings.Contains(text, bad+"\t") {
		t.Errorf("status --failed: %q, want the path's bytes as they are", text)
	}
}

// TestNonUTF8Root: a folder whose name is not UTF-8 is rebuilt by a build
// without folders (every folder indexed so far), and status --json gives
// its bytes, as build --json does for a failure's path under it. Once its
// name was written to the index as U+FFFD for the bad byte, and the build
// said it was not found.
func TestNonUTF8Root(t *testing.T) {
	model := fixtures.TinyModel(t)
	root := t.TempDir()
	photos := filepath.Join(root, "Fr\xe9d")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(model, "images", "checker_320x240.png"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(photos, "a.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(g, "build", photos)...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	bad := filepath.Join(photos, "bad.jpg")
	if err := os.WriteFile(bad, []byte("not a JPEG"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, append(g, "build", "--json")...)
	var sum struct {
		Added    int
		Failures []struct {
			Path      string
			PathBytes []byte `json:"path_bytes"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("build of every folder: exit %d %s %s", code, out, errs)
	}
	if len(sum.Failures) != 1 || string(sum.Failures[0].PathBytes) != bad {
		t.Errorf("build --json failures %+v, want %q's bytes", sum.Failures, bad)
	}
	out, errs, code = runCLI(t, "--db", g[1], "status", "--json")
	var st struct {
		Folders      []string
		FoldersBytes [][]byte `json:"folders_bytes"`
		LastBuild    struct {
			Roots      []string
			RootsBytes [][]byte `json:"roots_bytes"`
		} `json:"last_build"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: exit %d %s %s", code, out, errs)
	}
	if len(st.FoldersBytes) != 1 || string(st.FoldersBytes[0]) != photos {
		t.Errorf("status --json folders %q, bytes %q, want %q", st.Folders, st.FoldersBytes, photos)
	}
	if len(st.LastBuild.RootsBytes) != 1 || string(st.LastBuild.RootsBytes[0]) != photos {
		t.Errorf("status --json last build's roots %q, bytes %q, want %q", st.LastBuild.Roots, st.LastBuild.RootsBytes, photos)
	}
}

// TestStatusFoldersOutermost: a folder built on its own within another
// is counted, not listed beside it (once status listed lib, lib/B and
// lib/new9 after builds naming them); --json lists every one.
func TestStatusFoldersOutermost(t *testing.T) {
	model := fixtures.TinyModel(t)
	root := t.TempDir()
	lib := filepath.Join(root, "lib")
	for _, d := range []string{"B", "new9"} {
		if err := os.MkdirAll(filepath.Join(lib, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(root, "i.db")
	for _, dir := range []string{lib, filepath.Join(lib, "B"), filepath.Join(lib, "new9")} {
		if _, errs, code := runCLI(t, "--db", db, "--model", model, "--device", "reference", "build", dir); code != 0 {
			t.Fatalf("build %s: exit %d %s", dir, code, errs)
		}
	}
	out, _, code := runCLI(t, "--db", db, "status")
	if want := "folders:     " + lib + " (and 2 folders within them, built on their own)\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("status: exit %d\n%s\nwant the line %q", code, out, want)
	}
	out, _, _ = runCLI(t, "--db", db, "status", "--json")
	var st struct{ Folders []string }
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Folders) != 3 {
		t.Errorf("status --json folders %v (%v), want all 3", st.Folders, err)
	}
}
