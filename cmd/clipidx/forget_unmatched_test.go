package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/export"
)

// TestForgetNamesUnmatchedPaths: forget names every path that matched no
// indexed file and exits 1, even when another path matched (and was
// forgotten); `forget p/old p/oldr` once said "forgot 1 file" and exited
// 0, silent on the mistyped p/oldr. A path within another given path
// matched, and paths that all match exit 0.
func TestForgetNamesUnmatchedPaths(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ix.db")
	// /synthetic/00000000.jpg ... /synthetic/00000009.jpg
	if err := export.WriteSynthetic(db, 10, 4, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		paths     []string
		forgot    string
		code      int
		unmatched []string
	}{
		{[]string{"/synthetic/00000001.jpg", "/synthetic/00000001.jp", "/elsewhere"}, "forgot 1 file\n", 1, []string{"/synthetic/00000001.jp", "/elsewhere"}},
		{[]string{"/synthetic/00000001.jpg"}, "forgot 0 files\n", 1, []string{"/synthetic/00000001.jpg"}},
		{[]string{"/synthetic/00000002.jpg", "/synthetic/00000003.jpg"}, "forgot 2 files\n", 0, nil},
		{[]string{"/synthetic", "/synthetic/00000004.jpg"}, "forgot 7 files\n", 0, nil},
	} {
		out, errs, code := runCLI(t, append([]string{"--db", db, "forget"}, c.paths...)...)
		if out != c.forgot || code != c.code {
			t.Errorf("forget %q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.paths, code, out, errs, c.code, c.forgot)
		}
		for _, p := range c.paths {
			named := strings.Contains(errs, p+",") || strings.Contains(errs, p+" (")
			if want := strings.Contains(strings.Join(c.unmatched, "|")+"|", p+"|"); named != want {
				t.Errorf("forget %q: stderr %q names %s: %v, want %v", c.paths, errs, p, named, want)
			}
		}
	}
}
