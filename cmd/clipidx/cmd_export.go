package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/clipidx/clipidx/internal/export"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newExportCmd) }

func newExportCmd() *cobra.Command {
	var format, dtype, under string
	var rows, partition, partitions int
	var asJSON bool
	c := &cobra.Command{
		Use:   "export --format clip-retrieval|faiss-flat OUT",
		Short: "Write the vectors for autofaiss / clip-retrieval or FAISS (no model needed)",
		Long: `Write the index's vectors, one row per indexed file or webdataset sample in
path order, for the tools that take over from clipidx:

  --format clip-retrieval OUT   the embeddings folder clip-retrieval writes:
      OUT/img_emb/img_emb_{P}.npy       L2-normalised rows, '<f2' (--dtype f32: '<f4')
      OUT/text_emb/text_emb_{P}.npy     caption vectors (build --captions), row for row
      OUT/metadata/metadata_{P}.parquet image_path, caption, sha256, mtime, the
                                        photo metadata (taken, taken_source,
                                        gps_latitude/longitude/altitude, city,
                                        region, country, country_code,
                                        camera_make, camera_model, lens,
                                        pixel_width/height; null when unknown)
                                        and the samples' JSON fields (url, key, ...)
    then: autofaiss build_index --embeddings OUT/img_emb --index_path knn.index \
            --index_infos_path infos.json --metric_type ip
  --format faiss-flat OUT.index  a FAISS IndexFlatIP file (float32) and
                                 OUT.index.paths, one path per line in row order

OUT must be new or empty. A machine of a split build (build --shard I/N) writes
its own partition with --partition I --partitions N into a shared folder that
holds the others' partitions; no existing file is ever overwritten.`,
		Example: `  clipidx export --format clip-retrieval /data/emb
  clipidx --db part-3.db export --format clip-retrieval --partition 3 --partitions 8 /shared/emb
  clipidx export --format faiss-flat --under ~/Photos/2024 photos.index`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := export.Options{DType: dtype, RowsPerPartition: rows, Partition: partition, Partitions: partitions}
			switch {
			case format != "clip-retrieval" && format != "faiss-flat":
				return usageError("--format takes clip-retrieval or faiss-flat, not %q", format)
			case dtype != "f16" && dtype != "f32":
				return usageError("--dtype takes f16 or f32, not %q", dtype)
			case rows < 0:
				return usageError("--rows-per-partition takes a count ≥ 1 (0 = %d)", export.DefaultRowsPerPartition)
			case cmd.Flags().Changed("partition") != cmd.Flags().Changed("partitions"):
				return usageError("--partition and --partitions go together (this machine's number I and the count N)")
			case partitions < 0 || cmd.Flags().Changed("partitions") && (partitions < 1 || partition < 0 || partition >= partitions):
				return usageError("--partition I --partitions N needs 0 ≤ I < N, not %d and %d", partition, partitions)
			case partitions > 0 && rows > 0:
				return usageError("--rows-per-partition does not apply with --partition: the partition holds this index's every row")
			case format == "faiss-flat" && (partitions > 0 || rows > 0 || dtype != "f16" && cmd.Flags().Changed("dtype")):
				return usageError("--format faiss-flat writes one float32 file: --dtype, --rows-per-partition and --partition do not apply")
			}
			if under != "" {
				abs, err := filepath.Abs(under)
				if err != nil {
					return err
				}
				opts.Under = abs
			}
			r, err := store.OpenReader(g.db, store.ReaderOptions{})
			if err != nil {
				return err
			}
			defer r.Close()
			bar := newProgress("exporting", "rows", -1)
			opts.Progress = func(n int) { bar.set(n) }
			var res *export.Result
			err = r.View(func(s *store.Snapshot) error {
				var err error
				if format == "faiss-flat" {
					res, err = export.FaissFlat(s, args[0], opts)
				} else {
					res, err = export.ClipRetrieval(s, args[0], opts)
				}
				return err
			})
			bar.done()
			if errors.Is(err, export.ErrNoRows) && under != "" {
				return fmt.Errorf("%w under %s", err, opts.Under)
			}
			if err != nil {
				return err
			}
			if n := len(res.Skipped); n > 0 {
				// A note on stderr in either mode: --json lists them too.
				fmt.Fprintf(cmd.ErrOrStderr(), "note: left out %d %s whose path holds a line break, which the paths file (one path a line) cannot hold (the clip-retrieval format keeps them):\n",
					n, plural(n, "file", "files"))
				for _, p := range res.Skipped {
					fmt.Fprintf(cmd.ErrOrStderr(), "  %q\n", p)
				}
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %d %s of dimension %d (%d %s, %.1f MB) to %s\n", res.Rows, plural(res.Rows, "row", "rows"),
				res.Dim, len(res.Files), plural(len(res.Files), "file", "files"), float64(res.Bytes)/1e6, args[0])
			if res.TextRows > 0 && res.TextRows < res.Rows {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %d of %d rows have no caption vector; their text_emb rows are zero\n", res.Rows-res.TextRows, res.Rows)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&format, "format", "clip-retrieval", "clip-retrieval (an embeddings folder) or faiss-flat (an IndexFlatIP file)")
	f.StringVar(&dtype, "dtype", "f16", "clip-retrieval vectors as f16 ('<f2', as clip-retrieval writes) or f32 ('<f4')")
	f.IntVar(&rows, "rows-per-partition", 0, fmt.Sprintf("rows of each clip-retrieval partition (0 = %d)", export.DefaultRowsPerPartition))
	f.StringVar(&under, "under", "", "only the files at or under this folder (or the samples of this tar shard)")
	f.IntVar(&partition, "partition", 0, "write this index as partition I of a split export (with --partitions)")
	f.IntVar(&partitions, "partitions", 0, "the number N of partitions of a split export (one per machine)")
	f.BoolVar(&asJSON, "json", false, `print {"rows","dim","partitions","bytes","files","text_rows"}`)
	return c
}
