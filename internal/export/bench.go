package export

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/clipidx/clipidx/store"
)

// SyntheticIdentity is the model identity of WriteSynthetic's indexes.
func SyntheticIdentity(dim int) store.Identity {
	return store.Identity{Model: "synthetic", Dim: dim, Preprocess: "none"}
}

// WriteSynthetic creates an index at db holding rows random unit vectors
// of dimension dim, one file each (/synthetic/NNNNNNNN.jpg), for
// benchmarks. It is deterministic for a seed and skips fsync.
func WriteSynthetic(db string, rows, dim int, seed uint64) error {
	w, err := store.OpenWriter(db, SyntheticIdentity(dim), store.WriterOptions{NoSync: true})
	if err != nil {
		return err
	}
	defer w.Close()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	const per = 8192
	var b store.Batch
	vecs := make([]float32, per*dim)
	var key [8]byte
	for lo := 0; lo < rows; lo += per {
		b.Reset()
		for i := lo; i < min(lo+per, rows); i++ {
			v := vecs[(i-lo)*dim : (i-lo+1)*dim]
			for k := range v {
				v[k] = float32(r.NormFloat64())
			}
			binary.LittleEndian.PutUint64(key[:], uint64(i)^seed<<32)
			b.Put(fmt.Sprintf("/synthetic/%08d.jpg", i), store.File{Size: 1000, MtimeNs: int64(i), Hash: sha256.Sum256(key[:])}, v)
		}
		if err := w.Commit(&b); err != nil {
			return fmt.Errorf("synthetic index %s: %w", db, err)
		}
	}
	return nil
}

// BenchResult is what Bench measured (clipidx bench export --json).
type BenchResult struct {
	Seconds   float64 `json:"seconds"`    // the export alone, synthetic index ready
	Bytes     int64   `json:"bytes"`      // bytes written by the export
	RowsPerS  float64 `json:"rows_per_s"` // rows exported per second
	Rows      int     `json:"rows"`
	Dim       int     `json:"dim"`
	SetupSecs float64 `json:"setup_seconds"` // writing the synthetic index
}

// Bench writes a synthetic index of rows vectors of dimension dim under
// work (a scratch folder, emptied by the caller), then times its export
// as clip-retrieval would write it (float16, default partitions).
func Bench(work string, rows, dim int) (*BenchResult, error) {
	if rows <= 0 || dim <= 0 {
		return nil, fmt.Errorf("%w: %d vectors of dimension %d", ErrOptions, rows, dim)
	}
	db := filepath.Join(work, "synthetic.db")
	t0 := time.Now()
	if err := WriteSynthetic(db, rows, dim, 1); err != nil {
		return nil, err
	}
	setup := time.Since(t0)
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var res *Result
	t0 = time.Now()
	err = r.View(func(s *store.Snapshot) error {
		var err error
		res, err = ClipRetrieval(context.Background(), s, filepath.Join(work, "export"), Options{})
		return err
	})
	secs := time.Since(t0).Seconds()
	if err != nil {
		return nil, err
	}
	return &BenchResult{Seconds: secs, Bytes: res.Bytes, RowsPerS: float64(res.Rows) / secs, Rows: res.Rows, Dim: dim, SetupSecs: setup.Seconds()}, nil
}
