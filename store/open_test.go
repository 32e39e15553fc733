package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenWriterReadOnlyFile: an index file the user may read but not
// write is refused naming it once ("open i.db: open i.db: permission
// denied" once). Root writes any file, so this runs for other users only.
func TestOpenWriterReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which may write a read-only file: nothing to refuse")
	}
	path := filepath.Join(t.TempDir(), "i.db")
	closeW(t, openW(t, path))
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := OpenWriter(path, testID, WriterOptions{})
	if err == nil || !os.IsPermission(err) || strings.Count(err.Error(), path) != 1 {
		t.Errorf("OpenWriter on a read-only file: %v, want a permission error naming it once", err)
	}
}

// TestOpenEmptyFile: a zero-byte index file is, for a reader, an index no
// build has written yet (ErrNoIndex, saying the file is empty, the file left
// as it was), and a writer fills it as it would create a missing file.
func TestOpenEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(path, ReaderOptions{})
	if err == nil {
		r.Close()
	}
	if !errors.Is(err, ErrNoIndex) || !strings.Contains(err.Error(), path+" is empty (0 bytes)") {
		t.Errorf("OpenReader on an empty file: %v, want ErrNoIndex saying %s is empty", err, path)
	}
	if _, err := Forget(path, []string{"/a"}, WriterOptions{}); !errors.Is(err, ErrNoIndex) {
		t.Errorf("Forget on an empty file: %v, want ErrNoIndex", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the reader or Forget changed the empty file: %v, %v", fi, err)
	}
	w := openW(t, path)
	var b Batch
	b.Put("/a", File{Hash: hashOf("1")}, vec(1, 8))
	commit(t, w, &b)
	closeW(t, w)
	view(t, path, func(s *Snapshot) {
		if got := paths(t, s, "/"); len(got) != 1 || got[0] != "/a" {
			t.Errorf("after a build on the empty file: files %v, want [/a]", got)
		}
	})
}
