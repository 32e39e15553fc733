package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompactStoppedBeforeCopy: a compaction stopped before it began to
// copy (Ctrl-C while it waited for the lock or checked the index) stops
// there. It went on to copy and replace a small index whole, where the
// copy looks at its context only every 1024 records.
func TestCompactStoppedBeforeCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	compactFixture(t, path, 20)
	was := folderState(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compact(ctx, path, CompactOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Compact with its context stopped: %v, want context.Canceled", err)
	}
	if diff := sameFolder(was, folderState(t, dir)); diff != nil {
		t.Errorf("a stopped compaction changed the folder: %v", diff)
	}
}

// TestReplacingNamesItselfInLock: while a compaction or merge holds an
// index's build lock, a build that meets it names it ("held by pid N
// (clipidx compact)"); it said only that a build was running, or named
// whichever command had held the lock before. Released, it clears it.
func TestReplacingNamesItselfInLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	compactFixture(t, path, 10)
	release, err := lockReplaced(path, path, "clipidx compact", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenWriter(path, testID, WriterOptions{})
	release()
	if !errors.Is(err, ErrBuildRunning) || !strings.Contains(err.Error(), "(clipidx compact)") {
		t.Errorf("a build meeting a compaction: %v, want ErrBuildRunning naming clipidx compact", err)
	}
	if h, ok := readHolder(path + ".lock"); ok {
		t.Errorf("the lock still names %v after the compaction let go", h)
	}
	w, err := OpenWriter(path, testID, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
}
