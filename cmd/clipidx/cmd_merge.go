package main

import (
	"encoding/json"
	"errors"
	"fmt"

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
not needed. Every index must come from the same model and settings; an input
that does not is refused with the reason, and nothing is written. So is an
input that is OUT, or another input, under another name (a link, a hard link,
a relative path).

OUT is replaced whole or not at all: the merge writes into a copy of OUT
beside it and renames the copy over OUT at the end, so a merge that fails
part-way (a damaged input, a full disk) leaves OUT as it was. That needs
free space for a copy of OUT in its folder. No build can write OUT meanwhile.

A path held by several inputs keeps one record whatever their order: an
indexed record over a failed one, then the later modification time.`,
		Example: `  # four machines built with --shard 0/4 ... 3/4 into part-0.db ... part-3.db
  clipidx merge all.db part-0.db part-1.db part-2.db part-3.db`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sum store.MergeSummary
			err := waitForLock(cmd, noWait, func() (err error) {
				sum, err = store.Merge(args[0], args[1:], store.WriterOptions{})
				return err
			})
			if err != nil {
				if errors.Is(err, store.ErrMergeInput) || errors.Is(err, store.ErrModelMismatch) {
					return &exitError{code: 1, err: err}
				}
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(sum)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d %s from %d %s into %s (%d new %s, %d duplicate %s)\n",
				sum.Files, plural(sum.Files, "record", "records"), sum.Inputs, plural(sum.Inputs, "index", "indexes"), args[0],
				sum.Vectors, plural(sum.Vectors, "vector", "vectors"), sum.Duplicates, plural(sum.Duplicates, "path", "paths"))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print {"inputs","files","vectors","duplicates"}`)
	c.Flags().BoolVar(&noWait, "no-wait", false, "fail at once when a build (a clipidx watch, serve --watch or build) holds OUT, instead of waiting for it")
	return c
}
