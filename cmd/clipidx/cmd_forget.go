package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newForgetCmd) }

func newForgetCmd() *cobra.Command {
	var noWait bool
	c := &cobra.Command{
		Use:   "forget PATH...",
		Short: "Drop the index entries of files or folders (e.g. a renamed or deleted folder)",
		Long: `Remove from the index every file at or under each PATH, whether it still
exists on disk or not, and free the vectors no other file uses. Use it for a
folder that was renamed, moved or deleted: build only removes missing files
under folders that still exist. The model is not needed.`,
		Example: `  clipidx forget ~/Photos/old-camera
  clipidx forget /media/usb-disk/photos`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs := make([]string, len(args))
			for i, a := range args {
				p, err := filepath.Abs(a)
				if err != nil {
					return err
				}
				abs[i] = p
			}
			var n int
			var unmatched []string
			err := waitForLock(cmd, noWait, func() (err error) {
				unmatched = unmatchedPaths(abs)
				n, err = store.Forget(g.db, abs, store.WriterOptions{})
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forgot %d %s\n", n, plural(n, "file", "files"))
			if n == 0 {
				unmatched = abs
			}
			if len(unmatched) > 0 {
				// Most likely a typo or a path given relative to another
				// folder, even when the other paths matched: say which,
				// and let scripts see it (as rm does for a missing file).
				return fmt.Errorf("no indexed file is at or under %s (clipidx status names the indexed folders)", strings.Join(unmatched, ", "))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&noWait, "no-wait", false, "fail at once when a build (a clipidx watch, serve --watch or build) holds the index, instead of waiting for it")
	return c
}

// unmatchedPaths returns those of paths under which the index holds no
// file record, as forget is about to find them; nil when the index cannot
// be read (store.Forget then says why).
func unmatchedPaths(paths []string) []string {
	r, err := store.OpenReader(g.db, store.ReaderOptions{})
	if err != nil {
		return nil
	}
	defer r.Close()
	var none []string
	err = r.View(func(s *store.Snapshot) error {
		for _, p := range paths {
			err := s.FilesWithin(p, func(string, store.File) error { return errFound })
			if err == nil {
				none = append(none, p)
			} else if !errors.Is(err, errFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return none
}
