package store

import (
	"context"
	"errors"
	"path/filepath"
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
