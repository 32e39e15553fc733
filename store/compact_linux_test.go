package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCompactNoSpace: a folder without room for the new file (the
// index's live data and a margin) is refused before the copy, naming the
// folder, with the index as it was and no new file left; with room made,
// the same compaction runs.
func TestCompactNoSpace(t *testing.T) {
	dir := smallDisk(t, "64m")
	path := filepath.Join(dir, "x.db")
	compactFixture(t, path, 6000)
	live, _, err := liveBytes(path)
	if err != nil {
		t.Fatal(err)
	}
	// Leave the live data's size free, less than the margin asks.
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * int64(st.Bsize)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, avail-live), 0o644); err != nil {
		t.Fatal(err)
	}
	was := folderState(t, dir)
	_, err = Compact(context.Background(), path, CompactOptions{})
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Compact with %d bytes free for %d live: %v, want ErrNoSpace naming %s", live, live, err, dir)
	}
	if diff := sameFolder(was, folderState(t, dir)); diff != nil {
		t.Errorf("a compaction refused for want of space changed the folder: %v", diff)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	before, _ := dumpIndex(t, path)
	if _, err := Compact(context.Background(), path, CompactOptions{}); err != nil {
		t.Fatalf("with room made: %v", err)
	}
	if after, _ := dumpIndex(t, path); len(after) != len(before) {
		t.Errorf("%d lines in the dump after compact, %d before", len(after), len(before))
	}
}

// TestCompactKeepsOwner: an index root compacts keeps its owner and
// group (it became root's, which its user could no longer write).
func TestCompactKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the index another owner")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	compactFixture(t, path, 200)
	const uid, gid = 65534, 65534
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(context.Background(), path, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
		t.Errorf("owner %d:%d after compact, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
}
