package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/store"
)

// e2eBinary builds the clipidx binary into a temporary folder.
func e2eBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "clipidx")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// builtPhotos copies the tiny model's images to photos/ in a fresh folder
// root, builds them into root/index.db with the binary, and returns the
// folder, the photos, the index and the global flags that name them.
func builtPhotos(t *testing.T, bin, model string) (root, photos, db string, g []string) {
	t.Helper()
	root = t.TempDir()
	photos, db = filepath.Join(root, "photos"), filepath.Join(root, "index.db")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	g = []string{"--db", db, "--model", model, "--device", "cpu"}
	if _, errs, code := e2eRun(t, bin, append(g, "build", photos)...); code != 0 {
		t.Fatalf("build: %d %s", code, errs)
	}
	return root, photos, db, g
}

// e2eRun runs the binary and returns stdout, stderr and the exit code.
func e2eRun(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CLIPIDX_MODEL=", "CLIPIDX_DB=", "CLIPIDX_DEVICE=", "CLIPIDX_WEIGHTS=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

type buildJSON struct {
	Added, Updated, Unchanged, Reused, Removed, Failed int
	Failures                                           []struct{ Path, Error string }
}

func TestBuildSearchStatusEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	db := filepath.Join(root, "index.db")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(photos)
	nImages := len(entries)
	put := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(photos, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checker, _ := os.ReadFile(filepath.Join(photos, "checker_320x240.png"))
	put("corrupt.jpg", "\xff\xd8\xff\xe0 this is not really a JPEG")
	put("zero.jpg", "")
	put(".hidden.png", string(checker))
	put("checker copy.PNG", string(checker))
	g := []string{"--db", db, "--model", model, "--device", "reference"}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return e2eRun(t, bin, append(slices.Clone(g), args...)...)
	}
	build := func() buildJSON {
		t.Helper()
		out, errs, code := run("build", "--json", photos)
		if code != 0 {
			t.Fatalf("build exit %d: %s", code, errs)
		}
		var b buildJSON
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatalf("build --json output %q: %v", out, err)
		}
		return b
	}

	// Before any build: search and status say there is no index yet.
	if _, errs, code := run("status"); code == 0 || !strings.Contains(errs, "clipidx build") {
		t.Errorf("status without an index: exit %d, %q", code, errs)
	}

	b := build()
	if b.Added != nImages || b.Reused != 1 || b.Failed != 2 || b.Unchanged != 0 {
		t.Errorf("first build: %+v, want %d added, 1 reused (the copy), 2 failed", b, nImages)
	}
	failed := map[string]string{}
	for _, f := range b.Failures {
		failed[filepath.Base(f.Path)] = f.Error
	}
	if !strings.Contains(failed["zero.jpg"], "empty") || failed["corrupt.jpg"] == "" || len(failed) != 2 {
		t.Errorf("failures %v", failed)
	}

	// Search: an indexed image finds itself (and its copy) first.
	out, errs, code := run("search", "--json", "-k", "3", "--image", filepath.Join(photos, "checker_320x240.png"))
	if code != 0 {
		t.Fatalf("search --image: %d %s", code, errs)
	}
	var res []struct {
		Path  string
		Score float32
	}
	json.Unmarshal([]byte(out), &res)
	if len(res) != 3 || res[0].Score < 0.9999 || res[1].Score != res[0].Score {
		t.Fatalf("search --image: %s", out)
	}
	if got := []string{filepath.Base(res[0].Path), filepath.Base(res[1].Path)}; !slices.Contains(got, "checker copy.PNG") || !slices.Contains(got, "checker_320x240.png") {
		t.Errorf("image and its copy not first: %v", got)
	}
	// Text query: score<TAB>path lines, best first, all indexed, none hidden.
	out, _, code = run("search", "-k", "100", "a photo of a cat")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != nImages+1 {
		t.Fatalf("text search: exit %d, %d lines:\n%s", code, len(lines), out)
	}
	for _, l := range lines {
		score, path, ok := strings.Cut(l, "\t")
		if !ok || !filepath.IsAbs(path) || strings.Contains(path, ".hidden") || score == "" {
			t.Errorf("bad result line %q", l)
		}
	}
	out, _, _ = run("search", "--paths-only", "-k", "2", "a photo of a cat", "--", "-a dog")
	if n := strings.Count(out, "\n"); n != 2 || strings.Contains(out, "\t") {
		t.Errorf("--paths-only: %q", out)
	}
	out, _, _ = run("search", "-0", "-k", "3", "cat")
	if n := strings.Count(out, "\x00"); n != 3 || strings.Contains(out, "\n") {
		t.Errorf("--null: %q", out)
	}
	out, _, _ = run("search", "--under", filepath.Join(root, "elsewhere"), "--json", "cat")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("--under an empty folder: %q", out)
	}

	// Status.
	out, _, code = run("status", "--json", "--check")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status: %d %v %q", code, err, out)
	}
	if st.Images != nImages+1 || st.Failed != 2 || st.Dim != 32 || st.DBBytes <= 0 || st.LastBuild == nil || !st.LastBuild.Complete {
		t.Errorf("status %+v", st)
	}
	if st.Device != "cpu-reference" {
		t.Errorf("status --json device %q, want cpu-reference (--device reference)", st.Device)
	}
	if out, _, _ := run("status"); !strings.Contains(out, "device:      cpu-reference") {
		t.Errorf("status does not name the device:\n%s", out)
	}

	out, _, code = run("status", "--failed")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "zero.jpg\tempty file") {
		t.Errorf("status --failed: %q", out)
	}

	// Re-run (without DIR: the last build's folders): nothing to do.
	if out, errs, code := run("build"); code != 0 || !strings.HasPrefix(out, fmt.Sprintf("added 0, updated 0, unchanged %d,", nImages+3)) {
		t.Errorf("build without DIR: exit %d, %q %q", code, out, errs)
	}
	// Rename: reused. Delete: removed.
	if b := build(); b.Unchanged != nImages+3 || b.Added+b.Updated+b.Reused+b.Failed+b.Removed != 0 {
		t.Errorf("re-run: %+v", b)
	}
	os.Rename(filepath.Join(photos, "noise_257x231.png"), filepath.Join(photos, "moved.png"))
	os.Remove(filepath.Join(photos, "gray_260x200.png"))
	os.Remove(filepath.Join(photos, "zero.jpg"))
	if b := build(); b.Reused != 1 || b.Removed != 3 || b.Added != 0 || b.Failed != 0 {
		t.Errorf("after rename and deletes: %+v", b)
	}
	if err := store.Check(db); err != nil {
		t.Errorf("index check: %v", err)
	}

	// A renamed folder: build keeps its entries offline and names forget,
	// which drops them.
	moved := filepath.Join(root, "renamed")
	if err := os.Rename(photos, moved); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := run("build", photos); code != 0 || !strings.Contains(errs, "clipidx forget "+photos) ||
		!strings.Contains(out, fmt.Sprintf("offline: %s, %d entries kept", photos, nImages+1)) {
		t.Errorf("build of a vanished folder: exit %d, %q %q", code, out, errs)
	}
	if out, errs, code := run("forget", photos); code != 0 || out != fmt.Sprintf("forgot %d files\n", nImages+1) {
		t.Errorf("forget: exit %d, %q %q", code, out, errs)
	}
	if out, _, _ := run("search", "--paths-only", "-k", "100", "cat"); out != "" {
		t.Errorf("search after forget still returns %q", out)
	}
	if err := store.Check(db); err != nil {
		t.Errorf("index check after forget: %v", err)
	}
	if err := os.Rename(moved, photos); err != nil {
		t.Fatal(err)
	}
	if b := build(); b.Added != nImages-1 || b.Reused != 1 || b.Failed != 1 {
		t.Errorf("build after forget: %+v", b)
	}

	// Another pipeline setting is refused with a way forward.
	_, errs, code = run("build", "--exif=false", photos)
	if code == 0 || !strings.Contains(errs, "--reindex") {
		t.Errorf("changed EXIF setting: exit %d, %q", code, errs)
	}
	// No model: build and search name `clipidx model pull`.
	for _, args := range [][]string{{"build", photos}, {"search", "cat"}} {
		_, errs, code := e2eRun(t, bin, append([]string{"--db", db, "--model", filepath.Join(root, "no-model")}, args...)...)
		if code == 0 || !strings.Contains(errs, "clipidx model pull") {
			t.Errorf("%v without a model: exit %d, %q", args, code, errs)
		}
	}
}

// TestBuildReportsWalkProblems: a folder the walk cannot enter is reported
// on stderr and listed in the --json failures, not skipped silently. (Too
// deep a folder stands in for an unreadable one, which root can read.)
func TestBuildReportsWalkProblems(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	deep := photos
	for range 260 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	png, _ := os.ReadFile(filepath.Join(model, "images", "checker_320x240.png"))
	os.WriteFile(filepath.Join(photos, "a.png"), png, 0o644)
	os.WriteFile(filepath.Join(deep, "lost.png"), png, 0o644)
	os.WriteFile(filepath.Join(photos, "e.png"), png[:40], 0o644) // truncated: a file failure
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	out, errs, code := e2eRun(t, bin, append(g, "build", "--json", photos)...)
	var b buildJSON
	if err := json.Unmarshal([]byte(out), &b); code != 0 || err != nil {
		t.Fatalf("build: exit %d, %v, %q %q", code, err, out, errs)
	}
	// Sorted by path: the folder photos/d/... before the file photos/e.png.
	if len(b.Failures) != 2 || !strings.Contains(b.Failures[0].Error, "deeper than") ||
		filepath.Base(b.Failures[1].Path) != "e.png" || b.Added != 1 {
		t.Errorf("--json: %+v, want a.png added, then the too-deep folder and e.png listed by path", b)
	}
	_, errs, code = e2eRun(t, bin, append(g, "build", photos)...)
	if code != 0 || !strings.Contains(errs, "deeper than") {
		t.Errorf("build: exit %d, stderr %q, want the too-deep folder reported", code, errs)
	}
}
