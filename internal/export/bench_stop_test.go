package export

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestWriteSyntheticStops: a context cancelled during the fill stops it
// before its next commit, with context.Canceled, and the index it was
// creating is removed.
func TestWriteSyntheticStops(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "synthetic.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer func() { syntheticCommitted = nil }()
	commits := 0
	syntheticCommitted = func(int) {
		commits++
		cancel()
	}
	err := WriteSyntheticContext(ctx, db, 100*8192, 4, 1)
	if !errors.Is(err, context.Canceled) || commits != 1 {
		t.Errorf("cancelled after its first commit: %v after %d commits, want context.Canceled after 1", err, commits)
	}
	if left := tree(t, dir); len(left) > 0 {
		t.Errorf("left %q", left)
	}
}

// TestBenchStops: Bench with a context cancelled before it starts, or
// during the fill, returns context.Canceled and leaves its scratch folder
// empty (no index, no export).
func TestBenchStops(t *testing.T) {
	defer func() { syntheticCommitted = nil }()
	for _, during := range []bool{false, true} {
		work := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		commits := 0
		syntheticCommitted = func(int) {
			commits++
			cancel()
		}
		if !during {
			cancel()
		}
		res, err := Bench(ctx, work, 100*8192, 4)
		cancel()
		if !errors.Is(err, context.Canceled) || res != nil {
			t.Errorf("cancelled (during the fill: %v): %+v, %v; want context.Canceled", during, res, err)
		}
		if during && commits != 1 || !during && commits != 0 {
			t.Errorf("cancelled (during the fill: %v): the fill went on for %d commits", during, commits)
		}
		if left := tree(t, work); len(left) > 0 {
			t.Errorf("cancelled (during the fill: %v): left %q", during, left)
		}
	}
}
