package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestStatusFailedEscaped: status --failed prints one path<TAB>reason line
// a failure, with a line break, a tab or an escape sequence in the path
// (and so in the reason that names it) shown as \xNN, as build shows
// them; a file named "a\nfake.jpg\tforged reason" once printed two
// records, the second forged. --json keeps the path exact.
func TestStatusFailedEscaped(t *testing.T) {
	model := fixtures.TinyModel(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(photos, "a\nfake.jpg\tforged reason\x1b[2J.jpg")
	if err := os.WriteFile(bad, []byte("not a JPEG"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(g, "build", photos)...); code != 0 && code != 1 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	out, errs, code := runCLI(t, "--db", g[1], "status", "--failed")
	if code != 0 {
		t.Fatalf("status --failed: exit %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1 || strings.Count(lines[0], "\t") != 1 || strings.Contains(out, "\x1b") {
		t.Fatalf("status --failed: %q; want one line with one tab and no escape", out)
	}
	path, reason, _ := strings.Cut(lines[0], "\t")
	if path != shown(bad) || !strings.Contains(reason, `\x0a`) || !strings.Contains(reason, `\x1b`) {
		t.Errorf("status --failed: path %q, reason %q; want %q and the path in the reason shown alike", path, reason, shown(bad))
	}

	js, _, _ := runCLI(t, "--db", g[1], "status", "--failed", "--json")
	var list []struct{ Path string }
	if err := json.Unmarshal([]byte(js), &list); err != nil || len(list) != 1 || list[0].Path != bad {
		t.Errorf("status --failed --json: %s (%v); want the path exactly", js, err)
	}
}
