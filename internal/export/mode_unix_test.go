//go:build unix

package export

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// TestExportFileMode: every exported file gets 0o666 less the umask, as
// os.Create gives (they were 0600, from their temporary file, so another
// user or a group's job could not read an export).
func TestExportFileMode(t *testing.T) {
	db, _ := fixture(t, 5)
	for _, c := range []struct {
		umask int
		want  fs.FileMode
	}{{0o022, 0o644}, {0o027, 0o640}} {
		old := syscall.Umask(c.umask)
		dir := t.TempDir()
		var files []string
		view(t, db, func(s *store.Snapshot) error {
			res, err := ClipRetrieval(context.Background(), s, filepath.Join(dir, "cr"), Options{NoSync: true})
			if err != nil {
				return err
			}
			files = append(files, res.Files...)
			res, err = FaissFlat(context.Background(), s, filepath.Join(dir, "knn.index"), Options{NoSync: true})
			if err != nil {
				return err
			}
			files = append(files, res.Files...)
			return nil
		})
		syscall.Umask(old)
		if len(files) < 5 {
			t.Fatalf("umask %#o: exported only %v", c.umask, files)
		}
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != c.want {
				t.Errorf("umask %#o: %s has mode %v, want %v", c.umask, f, fi.Mode().Perm(), c.want)
			}
		}
	}
}

// TestExportSyncsFolders: once its files are linked under their final
// names, an export syncs their folders (and the output folder holding
// img_emb/ and the others), so that a crash does not lose the names; with
// NoSync it does not.
func TestExportSyncsFolders(t *testing.T) {
	db, _ := fixture(t, 6)
	var synced []string
	defer func(f func(string) error) { syncDir = f }(syncDir)
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return nil
	}
	out := filepath.Join(t.TempDir(), "cr")
	view(t, db, func(s *store.Snapshot) error {
		_, err := ClipRetrieval(context.Background(), s, out, Options{})
		return err
	})
	for _, d := range []string{out, filepath.Join(out, "img_emb"), filepath.Join(out, "metadata"), filepath.Join(out, "text_emb")} {
		if !slices.Contains(synced, d) {
			t.Errorf("%s not synced (synced %v)", d, synced)
		}
	}
	synced = nil
	view(t, db, func(s *store.Snapshot) error {
		_, err := FaissFlat(context.Background(), s, filepath.Join(out, "knn.index"), Options{NoSync: true})
		return err
	})
	if len(synced) != 0 {
		t.Errorf("NoSync export synced %v", synced)
	}
}
