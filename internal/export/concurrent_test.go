package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/clipidx/clipidx/internal/flock"
	"github.com/clipidx/clipidx/store"
)

// TestSecondExportIntoOneOutputRefused: while an export writes into an
// output (a clip-retrieval folder, a FAISS file), a second export into the
// same output is refused with ErrBusy and removes nothing: the first's
// temporary files are not a killed export's leftovers. The first then
// finishes with all its rows.
func TestSecondExportIntoOneOutputRefused(t *testing.T) {
	if !flock.Supported {
		t.Skip("no flock on this system: two exports into one output are not told apart")
	}
	db := synthetic(t, 50)
	outputs := []struct {
		name string
		run  func(ctx context.Context, s *store.Snapshot, out string) (*Result, error)
	}{
		{"clip-retrieval", func(ctx context.Context, s *store.Snapshot, out string) (*Result, error) {
			return ClipRetrieval(ctx, s, out, Options{NoSync: true})
		}},
		{"faiss", func(ctx context.Context, s *store.Snapshot, out string) (*Result, error) {
			return FaissFlat(ctx, s, out, Options{NoSync: true})
		}},
	}
	for _, o := range outputs {
		t.Run(o.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "emb")
			started, release := make(chan struct{}), make(chan struct{})
			defer func(f func(*os.File, []byte) (int, error)) { writeFile = f }(writeFile)
			first := true
			writeFile = func(f *os.File, p []byte) (int, error) {
				if first { // the first export's first write waits for the second
					first = false
					close(started)
					<-release
				}
				return f.Write(p)
			}
			type result struct {
				res *Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				var r result
				view(t, db, func(s *store.Snapshot) error {
					r.res, r.err = o.run(context.Background(), s, out)
					return nil
				})
				done <- r
			}()
			<-started
			dir := filepath.Dir(out)
			before := tree(t, dir)
			var err error
			view(t, db, func(s *store.Snapshot) error {
				_, err = o.run(context.Background(), s, out)
				return nil
			})
			after := tree(t, dir)
			close(release)
			r := <-done
			if !errors.Is(err, ErrBusy) {
				t.Errorf("second export while the first writes: %v, want ErrBusy", err)
			}
			if !slices.Equal(before, after) {
				t.Errorf("the second export changed the output: %q, was %q", after, before)
			}
			if r.err != nil || r.res.Rows != 50 {
				t.Fatalf("first export: %+v, %v; want its 50 rows", r.res, r.err)
			}
		})
	}
}
