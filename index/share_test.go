package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// registry reads the index's registry of folders.
func registry(t *testing.T, db string) []string {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var roots []string
	err = r.View(func(s *store.Snapshot) error {
		roots, err = s.Roots()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return roots
}

// TestShardBuildRefusesOtherShares: `build --shard 0/3` on an index built
// without --shard removed the records of shares 1 and 2 (files and tar
// samples) as gone. It must refuse before changing anything, naming how
// many records lie outside its share; the index's own share still builds.
func TestShardBuildRefusesOtherShares(t *testing.T) {
	root, roots := datasetFixture(t)
	work := t.TempDir()
	db := filepath.Join(work, "all.db")
	o := opts(&fakeEnc{})
	if _, err := Build(context.Background(), db, roots, o); err != nil {
		t.Fatal(err)
	}
	// What share 0 holds, from a build of its own.
	part := filepath.Join(work, "part0.db")
	o0 := o
	o0.Shard, o0.Shards = 0, 3
	if _, err := Build(context.Background(), part, roots, o0); err != nil {
		t.Fatal(err)
	}
	all, mine := dump(t, db), dump(t, part)
	outside := len(all) - len(mine)
	if outside <= 0 || len(mine) == 0 {
		t.Fatalf("fixture: %d records, %d in share 0", len(all), len(mine))
	}
	regBefore := registry(t, db)

	// A new folder among the roots: a refused build must not record it.
	extra := filepath.Join(root, "more")
	write(t, filepath.Join(extra, "m.png"), png+"more")
	enc := &fakeEnc{}
	o0.Encoder = enc
	sum, err := Build(context.Background(), db, append(slices.Clone(roots), extra), o0)
	if !errors.Is(err, ErrOtherShares) || !strings.Contains(err.Error(), fmt.Sprintf(" %d records ", outside)) ||
		!strings.Contains(err.Error(), "clipidx merge") || !strings.Contains(err.Error(), "clipidx forget") {
		t.Errorf("--shard 0/3 on a whole index: %v (%+v), want ErrOtherShares naming %d records, merge and forget", err, sum, outside)
	}
	after := dump(t, db)
	if len(after) != len(all) {
		t.Errorf("the refused build left %d records of %d", len(after), len(all))
	}
	for p, r := range all {
		if a, ok := after[p]; !ok || a.file.Hash != r.file.Hash || !slices.Equal(a.vec, r.vec) {
			t.Errorf("%s lost or changed by the refused build", p)
		}
	}
	if reg := registry(t, db); !slices.Equal(reg, regBefore) {
		t.Errorf("the refused build changed the roots registry: %v, was %v", reg, regBefore)
	}
	if enc.calls.Load() != 0 {
		t.Errorf("the refused build ran the model %d times", enc.calls.Load())
	}

	// Share 0's own index builds again, and still sweeps a real deletion
	// inside its share.
	var gone string
	for p := range mine {
		if strings.HasPrefix(p, filepath.Join(root, "photos")) {
			gone = p
			break
		}
	}
	if gone == "" {
		t.Fatal("fixture: share 0 holds no photo")
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	sum, err = Build(context.Background(), part, roots, o0)
	if err != nil || sum.Removed != 1 {
		t.Errorf("share 0 rebuilt on its own index: %+v, %v; want 1 removed", sum, err)
	}
}
