package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestExportUnderLinkAndNewFolder: export --under takes a folder through a
// symbolic link as search --under does (ln -s photos plink; --under
// plink/2019), and faiss-flat writes into a folder that does not exist
// yet, creating it.
func TestExportUnderLinkAndNewFolder(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(filepath.Join(photos, "2019"), os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	images, err := os.ReadDir(filepath.Join(photos, "2019"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "index.db")
	if _, errs, code := e2eRun(t, bin, "--db", db, "--model", model, "--device", "reference", "build", photos); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	link := filepath.Join(root, "plink")
	if err := os.Symlink("photos", link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}

	out, errs, code := e2eRun(t, bin, "--db", db, "export", "--json", "--under", filepath.Join(link, "2019"), filepath.Join(root, "emb"))
	var res struct{ Rows int }
	json.Unmarshal([]byte(out), &res)
	if code != 0 || res.Rows != len(images) {
		t.Errorf("export --under plink/2019: exit %d, %d rows (%s); want %d rows", code, res.Rows, errs, len(images))
	}

	index := filepath.Join(root, "new", "folder", "photos.index")
	if _, errs, code := e2eRun(t, bin, "--db", db, "export", "--format", "faiss-flat", "--under", filepath.Join(link, "2019"), index); code != 0 {
		t.Fatalf("faiss-flat --under plink/2019 into a new folder: exit %d: %s", code, errs)
	}
	paths, err := os.ReadFile(index + ".paths")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(paths), "\n"), "\n")
	if len(lines) != len(images) || !strings.HasPrefix(lines[0], filepath.Join(photos, "2019")+string(filepath.Separator)) {
		t.Errorf("paths file %q, want the %d indexed paths under %s", lines, len(images), photos)
	}

	if _, errs, code := e2eRun(t, bin, "--db", db, "export", "--under", filepath.Join(link, "2020"), filepath.Join(root, "none")); code != 1 || !strings.Contains(errs, "no indexed image to export under "+filepath.Join(link, "2020")) {
		t.Errorf("export --under a folder without images: exit %d %q", code, errs)
	}
}
