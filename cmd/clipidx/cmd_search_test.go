package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestSearchRejectsNonFiniteThreshold: --threshold NaN or ±Inf is a usage
// error (exit 2) before any model or index is opened; a finite one is not.
func TestSearchRejectsNonFiniteThreshold(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "i.db")
	for _, tc := range []struct {
		threshold string
		bad       bool
	}{
		{"NaN", true},
		{"inf", true},
		{"-Inf", true},
		{"0.25", false},
	} {
		_, errs, code := e2eRun(t, bin, "--db", db, "--model", t.TempDir(), "search", "--threshold", tc.threshold, "cat")
		rejected := code == 2 && strings.Contains(errs, "--threshold")
		if rejected != tc.bad {
			t.Errorf("--threshold %s: exit %d, %q; want rejected=%v", tc.threshold, code, errs, tc.bad)
		}
	}
}

// TestSearchQualifiersEndToEnd: qualifiers in the query on a built index:
// a qualifier alone lists records (date<TAB>path, the file's time where
// it has no capture date; no score in --json); with
// a text it keeps matching results only; a malformed or unknown qualifier
// is a usage error naming it (exit 2) and never a text; --sort score with
// no term to score by is refused.
func TestSearchQualifiersEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	run := func(args ...string) (string, string, int) {
		return e2eRun(t, bin, append(slices.Clone(g), args...)...)
	}
	if _, errs, code := run("build", photos); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	entries, _ := os.ReadDir(photos)
	out, errs, code := run("search", "kind:photo", "-k", "100")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(entries) {
		t.Fatalf("search kind:photo: exit %d, %d lines for %d files: %q %s", code, len(lines), len(entries), out, errs)
	}
	for _, l := range lines {
		// The fixtures carry no capture date: each is listed with its
		// file's modification time, on the local clock.
		date, path, _ := strings.Cut(l, "\t")
		st, err := os.Stat(path)
		if err != nil || !strings.HasPrefix(path, photos) {
			t.Errorf("listing line %q: not a file of %s (%v)", l, photos, err)
			continue
		}
		if want := st.ModTime().In(time.Local).Format(time.DateTime); date != want {
			t.Errorf("listing line %q, want %s<TAB>path (the file's time)", l, want)
		}
	}
	out, _, _ = run("search", "kind:photo", "--json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) == 0 {
		t.Fatalf("--json listing %q: %v", out, err)
	}
	if _, has := listed[0]["score"]; has {
		t.Errorf("a listing has no score: %s", out)
	}
	if out, _, code = run("search", "a cat kind:photo", "--json"); code != 0 || !strings.Contains(out, `"score"`) {
		t.Errorf("text with a qualifier: exit %d %s", code, out)
	}
	if out, _, code = run("search", "a cat kind:video"); code != 0 || out != "" {
		t.Errorf("kind:video on photos: exit %d, %q; want nothing", code, out)
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"search", "a cat year:19"}, []string{`"year:19"`, "four digits"}},
		{[]string{"search", "a cat yaer:2019"}, []string{`"yaer:2019"`, "no qualifier"}},
		{[]string{"search", "--", "-place:paris"}, []string{`"-place:paris"`, "negated"}},
		{[]string{"search", "--sort", "score", "kind:photo"}, []string{"--sort score"}},
		{[]string{"search", "--sort", "newest", "cat"}, []string{"--sort", `"newest"`}},
	} {
		_, errs, code := run(tc.args...)
		for _, w := range tc.want {
			if code != 2 || !strings.Contains(errs, w) {
				t.Errorf("%v: exit %d, %q; want exit 2 naming %s", tc.args, code, errs, w)
			}
		}
	}
}
