package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newMergeCmd) }

func newMergeCmd() *cobra.Command {
	var asJSON, noWait bool
	c := &cobra.Command{
		Use:   "merge OUT.db IN.db...",
		Short: "Join the indexes of a split build (--shard I/N) into one, without the model",
		Long: `Copy every record of the IN indexes into OUT (created if needed), vectors bit
for bit, with their captions, JSON metadata and caption vectors. The model is
not needed. Every index must come from the same model and settings, OUT's
included when it exists; an input that does not is refused, naming it, OUT
and what differs, and nothing is written. So is a file that is no clipidx
index or is damaged, and an input that is OUT, or another input, under
another name (a link, a hard link, a relative path).

OUT is replaced whole or not at all: the merge writes into a copy of OUT
beside it and renames the copy over OUT at the end, so a merge that fails
part-way (a damaged input, a full disk) leaves OUT as it was. That needs
free space for a copy of OUT in its folder. No build can write OUT meanwhile.

Ctrl-C or SIGTERM stops the merge at its next commit: the copy is removed,
OUT is left as it was, and the exit status is 130. A merge killed outright
(SIGKILL, a power cut) cannot remove its copy (OUT.merge-NUMBER); the next
merge into OUT removes it and says how much space that freed.

A path held by several inputs keeps one record whatever their order: an
indexed record over a failed one, then the later modification time. A tar
shard indexed at two versions (written again between the builds) keeps the
later version's samples only: those of the older one, OUT's own included,
are left out. A folder that an index lists offline stays offline, with the
entries the merged index keeps under it.`,
		Example: `  # four machines built with --shard 0/4 ... 3/4 into part-0.db ... part-3.db
  clipidx merge all.db part-0.db part-1.db part-2.db part-3.db`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			finished := make(chan struct{})
			defer close(finished) // runs before stop
			go announceMergeStop(ctx, stop, finished, args[0], cmd.ErrOrStderr())

			bar := newProgress("merging", "records", -1)
			opts := store.MergeOptions{
				Progress: func(p store.MergeProgress) {
					bar.setTotal(p.Total)
					bar.set(p.Done)
				},
				OnLeftover:    leftoverReporter(cmd.ErrOrStderr()),
				WriterOptions: store.WriterOptions{Command: "clipidx merge"},
			}
			var sum store.MergeSummary
			err := waitForLock(cmd, noWait, func() (err error) {
				sum, err = store.MergeContext(ctx, args[0], args[1:], opts)
				return err
			})
			bar.done()
			if err != nil {
				switch {
				case errors.Is(err, store.ErrMergeInput) || errors.Is(err, store.ErrModelMismatch):
					return &exitError{code: 1, err: err}
				case errors.Is(err, context.Canceled):
					return mergeInterrupted(args[0], err)
				}
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(sum)
			}
			stale := ""
			if sum.Stale > 0 {
				stale = fmt.Sprintf(", %d %s of an older version of a tar shard left out", sum.Stale, plural(sum.Stale, "record", "records"))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d %s from %d %s into %s (%d new %s, %d duplicate %s%s)\n",
				sum.Files, plural(sum.Files, "record", "records"), sum.Inputs, plural(sum.Inputs, "index", "indexes"), args[0],
				sum.Vectors, plural(sum.Vectors, "vector", "vectors"), sum.Duplicates, plural(sum.Duplicates, "path", "paths"), stale)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print {"inputs","files","vectors","duplicates","stale"}`)
	c.Flags().BoolVar(&noWait, "no-wait", false, "fail at once when a build (a clipidx watch, serve --watch or build) holds OUT, instead of waiting for it")
	return c
}

// announceMergeStop says, at the first Ctrl-C or SIGTERM, that the merge
// is stopping, and lets the next one end the process at once (as
// announceStop does for a build); finished closes when the command ends.
func announceMergeStop(ctx context.Context, stop func(), finished <-chan struct{}, out string, w io.Writer) {
	select {
	case <-ctx.Done():
		select {
		case <-finished:
			return
		default:
		}
		stop()
		fmt.Fprintf(w, "\nstopping: %s stays as it was (Ctrl-C again to quit at once)\n", out)
	case <-finished:
	}
}

// leftoverReporter is store.MergeOptions.OnLeftover and
// store.CompactOptions.OnLeftover: it says which copies left by killed
// merges or compactions (both name them INDEX.merge-NUMBER) were removed
// and the space each freed, and which could not be.
func leftoverReporter(w io.Writer) func(store.Leftover) {
	return func(l store.Leftover) {
		if l.Err != nil {
			fmt.Fprintf(w, "warning: %v\n", l.Err)
			return
		}
		fmt.Fprintf(w, "removed %s, left by an interrupted compact or merge (%s freed)\n", l.Path, humanBytes(l.Size))
	}
}

// mergeInterrupted is the exit of a merge stopped by a signal: out is as
// it was; its copy is gone unless removing it failed (store joins that
// *fs.PathError to the cancellation).
func mergeInterrupted(out string, err error) *exitError {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "remove" {
		return &exitError{code: 130, err: fmt.Errorf("merge interrupted: %s is unchanged, but its partial copy %s could not be removed (%v): delete it, or the next merge into %s will", out, pe.Path, pe.Err, out)}
	}
	return &exitError{code: 130, err: fmt.Errorf("merge interrupted: %s is unchanged and no partial copy is left; run the same command again to merge", out)}
}
