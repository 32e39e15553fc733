package export

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/clipidx/clipidx/store"
)

// SyntheticIdentity is the model identity of WriteSynthetic's indexes.
func SyntheticIdentity(dim int) store.Identity {
	return store.Identity{Model: "synthetic", Dim: dim, Preprocess: "none"}
}

// WriteSynthetic is WriteSyntheticContext without a way to stop it.
func WriteSynthetic(db string, rows, dim int, seed uint64) error {
	return WriteSyntheticContext(context.Background(), db, rows, dim, seed)
}

// syntheticCommitted, when set (by tests), is called after each commit of
// WriteSyntheticContext with the rows committed so far.
var syntheticCommitted func(rows int)

// WriteSyntheticContext creates an index at db holding rows random unit
// vectors of dimension dim, one file each (/synthetic/NNNNNNNN.jpg), for
// benchmarks. It is deterministic for a seed and skips fsync. ctx is
// checked every 1024 rows; when it is done, WriteSyntheticContext returns
// its error and removes db if it created it.
func WriteSyntheticContext(ctx context.Context, db string, rows, dim int, seed uint64) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	created := !exists(db)
	createdLock := !exists(db + ".lock") // the store's build lock, left by Close
	w, err := store.OpenWriter(db, SyntheticIdentity(dim), store.WriterOptions{NoSync: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("synthetic index %s: %w", db, cerr)
		}
		if err != nil && created {
			os.Remove(db)
			if createdLock {
				os.Remove(db + ".lock")
			}
		}
	}()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	const per = 8192
	var b store.Batch
	vecs := make([]float32, per*dim)
	var key [8]byte
	for lo := 0; lo < rows; lo += per {
		b.Reset()
		for i := lo; i < min(lo+per, rows); i++ {
			if (i-lo)%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
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
		if syntheticCommitted != nil {
			syntheticCommitted(min(lo+per, rows))
		}
	}
	return ctx.Err()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
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
// as clip-retrieval would write it (float16, default partitions). When
// ctx is done it stops (the fill every 1024 rows, the export between
// blocks of rows) and returns ctx's error, having removed the index and
// the export it had begun.
func Bench(ctx context.Context, work string, rows, dim int) (*BenchResult, error) {
	if rows <= 0 || dim <= 0 {
		return nil, fmt.Errorf("%w: %d vectors of dimension %d", ErrOptions, rows, dim)
	}
	db := filepath.Join(work, "synthetic.db")
	t0 := time.Now()
	if err := WriteSyntheticContext(ctx, db, rows, dim, 1); err != nil {
		return nil, err
	}
	setup := time.Since(t0)
	res, secs, err := benchExport(ctx, db, filepath.Join(work, "export"))
	if err != nil {
		os.Remove(db)
		os.Remove(db + ".lock")
		return nil, err
	}
	return &BenchResult{Seconds: secs, Bytes: res.Bytes, RowsPerS: float64(res.Rows) / secs, Rows: res.Rows, Dim: dim, SetupSecs: setup.Seconds()}, nil
}

// benchExport times the export of the index db into the folder out
// (which a failed or stopped export leaves as it was: absent).
func benchExport(ctx context.Context, db, out string) (*Result, float64, error) {
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	var res *Result
	t0 := time.Now()
	err = r.View(func(s *store.Snapshot) error {
		var err error
		res, err = ClipRetrieval(ctx, s, out, Options{})
		return err
	})
	return res, time.Since(t0).Seconds(), err
}
