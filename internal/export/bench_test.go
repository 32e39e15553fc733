package export

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// BenchmarkClipRetrieval exports 20,000 vectors of dimension 1024 as
// float16 (see clipidx bench export for the 1M-row run).
func BenchmarkClipRetrieval(b *testing.B) {
	const rows, dim = 20000, 1024
	db := filepath.Join(b.TempDir(), "ix.db")
	if err := WriteSynthetic(db, rows, dim, 1); err != nil {
		b.Fatal(err)
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(rows * dim * 2)
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(b.TempDir(), "emb")
		err := r.View(func(s *store.Snapshot) error {
			_, err := ClipRetrieval(context.Background(), s, out, Options{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
