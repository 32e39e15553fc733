package store

import (
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
