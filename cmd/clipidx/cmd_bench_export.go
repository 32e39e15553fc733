package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/clipidx/clipidx/internal/export"
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
			// Ctrl-C or SIGTERM stops the fill or the export; the
			// temporary index and export are removed.
			ctx, stop := stopContext(cmd.Context())
			defer stop()
			res, err := export.Bench(ctx, tmp, n, dim)
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
