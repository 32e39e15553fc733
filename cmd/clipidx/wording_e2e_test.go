package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestUsageMistakes: a search without a query and bench search with no
// vectors or no results are usage errors (exit 2), caught before any model
// or index is opened.
func TestUsageMistakes(t *testing.T) {
	bin := e2eBinary(t)
	g := []string{"--db", filepath.Join(t.TempDir(), "i.db"), "--model", t.TempDir()}
	for _, args := range [][]string{
		{"search"},
		{"bench", "search", "--vectors", "0", "--dir", t.TempDir()},
		{"bench", "search", "--k", "0", "--vectors", "10", "--dim", "8", "--dir", t.TempDir()},
		{"bench", "search", "--queries", "0", "--dir", t.TempDir()},
	} {
		if _, errs, code := e2eRun(t, bin, append(g, args...)...); code != 2 {
			t.Errorf("%v: exit %d (%q), want 2", args, code, errs)
		}
	}
}

// TestSingularWording: one thing is "1 file", "1 query", not "1 files".
func TestSingularWording(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := e2eRun(t, bin, append(g, "build", photos)...); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"forget", filepath.Join(photos, "gradient_256.png")}, "forgot 1 file\n"},
		{[]string{"forget", photos}, "forgot 6 files\n"},
		{[]string{"bench", "search", "--vectors", "1", "--dim", "8", "--queries", "1", "--k", "1", "--dir", root}, "1 vector × 8 (16-bit scan + exact re-rank), 1 query, k=1"},
	} {
		out, errs, code := e2eRun(t, bin, append(g, tc.args...)...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, %q %q; want %q", tc.args, code, out, errs, tc.want)
		}
	}
	// Nothing left to forget (or a mistyped path): exit 1, naming the path.
	out, errs, code := e2eRun(t, bin, append(g, "forget", photos)...)
	if code != 1 || out != "forgot 0 files\n" || !strings.Contains(errs, "no indexed file is at or under "+photos) {
		t.Errorf("forget with nothing indexed there: exit %d, %q %q", code, out, errs)
	}
}
