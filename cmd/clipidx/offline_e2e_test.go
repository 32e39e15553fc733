package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/store"
)

// moveAll moves every entry of from into to (which exists).
func moveAll(t *testing.T, from, to string) {
	t.Helper()
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildKeepsAwayFolderOffline: a folder whose share is unmounted (it
// lists nothing) keeps its entries; build and status say so, search still
// finds them marked offline; when the share is back its files are
// unchanged and nothing is offline any more.
func TestBuildKeepsAwayFolderOffline(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	nas, share := filepath.Join(root, "nas"), filepath.Join(root, "share")
	if err := os.CopyFS(nas, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(share, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(nas)
	n := len(entries)
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(slices.Clone(g), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out, errs
	}
	build := func() (b struct {
		buildJSON
		Offline []store.Offline
	}) {
		t.Helper()
		out, _ := run("build", "--json", nas)
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatalf("build --json %q: %v", out, err)
		}
		return b
	}
	if b := build(); b.Added+b.Reused != n {
		t.Fatalf("first build: %+v, want %d images", b, n)
	}

	moveAll(t, nas, share) // unmounted: the mount point lists nothing
	line := fmt.Sprintf("offline: %s, %d entries kept; `clipidx forget %s` drops them\n", nas, n, nas)
	if out, _ := run("build", nas); !strings.HasPrefix(out, "added 0, updated 0, unchanged 0, reused 0, removed 0, failed 0\n") || !strings.Contains(out, line) {
		t.Errorf("build with the share away: %q, want nothing removed and %q", out, line)
	}
	if b := build(); b.Removed != 0 || len(b.Offline) != 1 || b.Offline[0].Dir != nas || b.Offline[0].Entries != n {
		t.Errorf("build --json with the share away: %+v", b)
	}
	out, _ := run("search", "-k", "100", "a photo of a cat")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !strings.HasSuffix(l, "\t(offline)") {
			t.Errorf("result %q not marked offline", l)
		}
	}
	if len(lines) != n {
		t.Errorf("search with the share away found %d results, want all %d kept", len(lines), n)
	}
	out, _ = run("search", "--json", "-k", "1", "a photo of a cat")
	var res []struct {
		Path    string
		Offline bool
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || !res[0].Offline {
		t.Errorf("search --json with the share away: %q, want its result offline: true", out)
	}
	if out, _ := run("status"); !strings.Contains(out, line) {
		t.Errorf("status with the share away does not say %q:\n%s", line, out)
	}
	var st statusJSON
	if out, _ := run("status", "--json"); json.Unmarshal([]byte(out), &st) != nil || len(st.Offline) != 1 || st.Offline[0].Entries != n {
		t.Errorf("status --json with the share away: %q", out)
	}

	moveAll(t, share, nas) // mounted again
	if b := build(); b.Unchanged != n || b.Added+b.Updated+b.Reused+b.Removed+b.Failed != 0 || len(b.Offline) != 0 {
		t.Errorf("build with the share back: %+v, want %d unchanged, nothing offline", b, n)
	}
	if out, _ := run("status"); strings.Contains(out, "offline:") {
		t.Errorf("status with the share back still lists a folder offline:\n%s", out)
	}
	if out, _ := run("search", "-k", "100", "a photo of a cat"); strings.Contains(out, "(offline)") || strings.Count(out, "\n") != n {
		t.Errorf("search with the share back: %q", out)
	}
}
