package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newCompactCmd) }

func newCompactCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "compact",
		Short: "Give the space that forget, rebuilds and merges freed in the index back to the disk",
		Long: `Rewrite the index into a new file beside it, packed, and rename that over it.
The index never shrinks by itself: the space forget, re-indexed photos and
merges free inside it is reused by later builds, but the file keeps its size.
Every record, vector and setting stays exactly as it was; the model is not
needed. clipidx status says when there is space to give back.

It needs free space beside the index for the new file (about the size of the
index's live data): a folder without it is refused before anything is written.
So is a damaged index (clipidx build --reindex starts it over). No build,
merge, forget or watch can run meanwhile: one that holds the index makes
compact fail at once ("index busy"). A serve goes on answering throughout.

Ctrl-C or SIGTERM stops it: the new file is removed, the index is as it was,
and the exit status is 130. A compact killed outright (SIGKILL, a power cut)
leaves its new file (INDEX.merge-NUMBER); the next compact or merge removes it.`,
		Example: `  clipidx forget ~/Photos/old-camera
  clipidx compact`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			finished := make(chan struct{})
			defer close(finished) // runs before stop
			go announceMergeStop(ctx, stop, finished, g.db, cmd.ErrOrStderr())

			sum, err := store.Compact(ctx, g.db, store.CompactOptions{OnLeftover: leftoverReporter(cmd.ErrOrStderr()), Command: "clipidx compact"})
			switch {
			case errors.Is(err, store.ErrBuildRunning):
				return fmt.Errorf("index busy: %w; run clipidx compact again once it has finished", err)
			case errors.Is(err, context.Canceled):
				return compactInterrupted(g.db, err)
			case err != nil:
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(sum)
			}
			freed := "nothing freed"
			if n := sum.Before - sum.After; n > 0 {
				freed = humanBytes(n) + " freed"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compacted %s: %s → %s (%s)\n", g.db, humanBytes(sum.Before), humanBytes(sum.After), freed)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print {"path","before_bytes","after_bytes"}`)
	return c
}

// compactInterrupted is the exit of a compact stopped by a signal: the
// index is as it was; its new file is gone unless removing it failed
// (store joins that *fs.PathError to the cancellation).
func compactInterrupted(db string, err error) *exitError {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "remove" {
		return &exitError{code: 130, err: fmt.Errorf("compact interrupted: %s is unchanged, but the new file %s could not be removed (%v): delete it, or the next compact will", db, pe.Path, pe.Err)}
	}
	return &exitError{code: 130, err: fmt.Errorf("compact interrupted: %s is unchanged and no new file is left", db)}
}
