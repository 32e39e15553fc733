package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/clipidx/clipidx/internal/export"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { benchCommands = append(benchCommands, newBenchExportCmd) }

func newBenchExportCmd() *cobra.Command {
	var n, dim int
	var asJSON bool
	var dir string
	c := &cobra.Command{
		Use:   "export --vectors N",
		Short: "Time a clip-retrieval export of a temporary index of random vectors",
		Long: `Fill a temporary index with N random unit vectors (one file each), then time
its export as clip-retrieval writes it (float16 .npy and Parquet metadata,
fsynced). It needs about 6·N·dim bytes of disk under --dir (the system
temporary folder by default); seconds count the export alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n <= 0 || dim <= 0 {
				return usageError("--vectors and --dim take a count ≥ 1")
			}
			tmp, left, release, err := benchScratch(dir, "clipidx-bench-export-")
			noteLeftovers(cmd.ErrOrStderr(), left, "bench export")
			if err != nil {
				return err
			}
			defer release()
			// Ctrl-C or SIGTERM stops the export (the fill once it is
			// done); the temporary index and export are removed.
			ctx, stop := stopContext(cmd.Context())
			defer stop()
			res, err := benchExport(ctx, tmp, n, dim)
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return &exitError{code: interruptCode(ctx), err: fmt.Errorf("interrupted: removed the temporary index and export in %s", tmp)}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %d vectors of dimension %d in %.2f s (%.0f rows/s, %.1f MB written; the index took %.1f s to fill)\n",
				res.Rows, res.Dim, res.Seconds, res.RowsPerS, float64(res.Bytes)/1e6, res.SetupSecs)
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&n, "vectors", 100000, "vectors in the temporary index")
	f.IntVar(&dim, "dim", 1024, "vector dimension")
	f.StringVar(&dir, "dir", "", "folder for the temporary index and export (default: the system temporary folder)")
	f.BoolVar(&asJSON, "json", false, `print {"seconds","bytes","rows_per_s","rows","dim","setup_seconds"}`)
	return c
}

// benchExport measures what export.Bench does, stopped through ctx: it
// fills an index of rows random vectors under work (export.WriteSynthetic,
// which takes no context: ctx is looked at once it is done), then times
// its export as clip-retrieval writes it (float16, default partitions).
func benchExport(ctx context.Context, work string, rows, dim int) (*export.BenchResult, error) {
	db := filepath.Join(work, "synthetic.db")
	t0 := time.Now()
	if err := export.WriteSynthetic(db, rows, dim, 1); err != nil {
		return nil, err
	}
	setup := time.Since(t0)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var res *export.Result
	t0 = time.Now()
	err = r.View(func(s *store.Snapshot) error {
		var err error
		res, err = export.ClipRetrieval(ctx, s, filepath.Join(work, "export"), export.Options{})
		return err
	})
	secs := time.Since(t0).Seconds()
	if err != nil {
		return nil, err
	}
	return &export.BenchResult{Seconds: secs, Bytes: res.Bytes, RowsPerS: float64(res.Rows) / secs, Rows: res.Rows, Dim: dim, SetupSecs: setup.Seconds()}, nil
}
