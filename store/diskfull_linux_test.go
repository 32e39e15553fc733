package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// smallDisk mounts a tmpfs of size bytes at a fresh folder, or skips the
// test (saying why) where this process may not mount.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("a full disk is stood in for by a small tmpfs, which this process may not mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestNewIndexOnFullDisk: a build creating its index on a disk too full
// for bbolt's first pages left a file of two pages, which every later run
// called damaged (--reindex then kept a useless .corrupt copy), where the
// README promises that the next run completes. The file is not left.
func TestNewIndexOnFullDisk(t *testing.T) {
	dir := smallDisk(t, "12k")
	path := filepath.Join(dir, "i.db")
	w, err := OpenWriter(path, testID, WriterOptions{})
	if err == nil {
		w.Close()
		t.Skip("the small disk held a new index")
	}
	if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("OpenWriter failed (%v) and left %s: %v", err, path, serr)
	}
}
