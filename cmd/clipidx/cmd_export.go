package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/clipidx/clipidx/internal/export"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newExportCmd) }

func newExportCmd() *cobra.Command {
	var format, dtype, under string
	var rows, partition, partitions int
	var asJSON, captions bool
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

OUT must be new or empty; faiss-flat creates OUT.index's folder. A machine of
a split build (build --shard I/N) writes its own partition with --partition I
--partitions N into a shared folder that holds the others' partitions; no
existing file is ever overwritten. A machine whose share holds no row writes
an empty partition (0-row files), so the export is complete.

text_emb is written when some row has a caption vector; --captions writes it
always (a zero row for each row without one), --captions=false never. Every
partition of a split export has text_emb or none (a mix is refused): after
build --captions, give every machine's export --captions, since a machine
whose share holds no caption cannot tell whether the build had them.

An export that fails (a full disk) or is stopped (Ctrl-C, SIGTERM: exit 130,
143) removes the files and folders it wrote, so OUT is as it was. What a
killed export leaves (hidden .NAME.tmp-* files, empty img_emb/, metadata/,
text_emb/ folders) does not count as OUT's content: the next export removes
it and says so.`,
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
			case format == "faiss-flat" && cmd.Flags().Changed("captions"):
				return usageError("--format faiss-flat writes the image vectors only: --captions does not apply")
			}
			if cmd.Flags().Changed("captions") {
				opts.Captions = export.CaptionsOff
				if captions {
					opts.Captions = export.CaptionsOn
				}
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
			ctx, stop := stopContext(cmd.Context())
			defer stop()
			bar := newProgress("exporting", "rows", -1)
			opts.Progress = func(n int) { bar.set(n) }
			var res *export.Result
			err = r.View(func(s *store.Snapshot) error {
				if opts.Under != "" {
					// The names the index holds the folder by, through
					// links, as search --under takes it.
					forms, err := search.UnderForms(s, []string{opts.Under})
					if err != nil {
						return err
					}
					opts.AlsoUnder = forms[1:]
				}
				var err error
				if format == "faiss-flat" {
					res, err = export.FaissFlat(ctx, s, args[0], opts)
				} else {
					res, err = export.ClipRetrieval(ctx, s, args[0], opts)
				}
				return err
			})
			bar.done()
			if res != nil {
				noteLeftovers(cmd.ErrOrStderr(), res.Leftovers, "export")
			}
			if errors.Is(err, export.ErrNoRows) && under != "" {
				return fmt.Errorf("%w under %s", err, opts.Under)
			}
			if err != nil {
				return exportFailed(ctx, err, res, args[0])
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
			if res.TextEmb && res.TextRows < res.Rows {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %d of %d rows have no caption vector; their text_emb rows are zero\n", res.Rows-res.TextRows, res.Rows)
			}
			if res.Rows == 0 {
				where := "in this index"
				if under != "" {
					where = "under " + opts.Under
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "note: partition %d is empty: no indexed image %s\n", partition, where)
			}
			if res.CaptionsUnknown {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: no exported row has a caption, so partition %d has no text_emb; if the build had --captions, every machine's export needs --captions for the partitions to line up\n", partition)
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
	f.BoolVar(&captions, "captions", false, "write text_emb (caption vectors, zero rows for the rows without one) even where no row has one; --captions=false: never (default: when some row has one)")
	f.BoolVar(&asJSON, "json", false, `print {"rows","dim","partitions","bytes","files","text_emb","text_rows"}`)
	return c
}

// exportFailed says what a failed or stopped export left: nothing it
// wrote is kept (the library removed it, listed in res.Removed).
func exportFailed(ctx context.Context, err error, res *export.Result, out string) error {
	kept := fmt.Sprintf("nothing was written to %s", out)
	if res != nil && len(res.Removed) > 0 {
		kept = fmt.Sprintf("removed the %d %s this export had written: %s is as it was", len(res.Removed), plural(len(res.Removed), "file or folder", "files and folders"), out)
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return &exitError{code: interruptCode(ctx), err: fmt.Errorf("interrupted: %s", kept)}
	}
	if res == nil {
		return err
	}
	return fmt.Errorf("%w\n%s", err, kept)
}

// noteLeftovers tells on w which leftovers of a killed run of cmd were
// removed.
func noteLeftovers(w io.Writer, paths []string, cmd string) {
	if len(paths) == 0 {
		return
	}
	fmt.Fprintf(w, "note: removed what an interrupted %s had left:\n", cmd)
	for _, p := range paths {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// caughtSignal is the cause of a context that stopContext cancelled.
type caughtSignal struct{ sig os.Signal }

func (c caughtSignal) Error() string { return "interrupted by " + c.sig.String() }

// stopContext is signal.NotifyContext(parent, SIGINT, SIGTERM) whose
// cause names the signal (see interruptCode). After the first signal the
// default action is back, so a second one kills at once.
func stopContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(caughtSignal{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

// interruptCode is the exit code of a command stopped through ctx: 128
// plus the signal's number as shells report it (SIGINT 130, SIGTERM 143),
// 130 when it was stopped otherwise.
func interruptCode(ctx context.Context) int {
	var c caughtSignal
	if errors.As(context.Cause(ctx), &c) {
		if s, ok := c.sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
	}
	return 130
}
