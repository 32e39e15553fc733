package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/internal/flock"
	"github.com/spf13/cobra"
)

// benchCommands registers `clipidx bench X` subcommands (cmd_bench_*.go).
var benchCommands []func() *cobra.Command

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		c := &cobra.Command{
			Use:   "bench",
			Short: "Measure this machine: model passes, builds, search latency",
		}
		for _, mk := range benchCommands {
			c.AddCommand(mk())
		}
		return c
	})
}

// scratchMark is the file a bench's temporary folder holds once the folder
// is locked (flock.TryLockDir) by the run that made it, for as long as the
// run lasts. A folder with the mark whose lock is free was left by a run
// that was killed; one without it (just made, or made by a clipidx before
// the mark) is never taken for a leftover.
const scratchMark = ".clipidx-bench-run"

// benchScratch makes a temporary folder prefix* under dir (the system
// temporary folder when ""), locked for this run, and returns it with
// release, which removes it and then drops the lock. It first removes the
// folders prefix* under dir that killed runs left (listed in left): those
// with the mark whose lock is free. Where flock does not hold between
// processes nothing is taken for a leftover.
func benchScratch(dir, prefix string) (tmp string, left []string, release func(), err error) {
	if dir == "" {
		dir = os.TempDir()
	}
	left, err = removeBenchLeftovers(dir, prefix)
	if err != nil {
		return "", left, nil, err
	}
	tmp, err = os.MkdirTemp(dir, prefix)
	if err != nil {
		return "", left, nil, err
	}
	lock, err := flock.TryLockDir(tmp)
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, scratchMark), nil, 0o644)
	}
	if err != nil {
		lock.Unlock()
		os.RemoveAll(tmp)
		return "", left, nil, fmt.Errorf("temporary folder %s: %w", tmp, err)
	}
	return tmp, left, func() {
		os.RemoveAll(tmp)
		lock.Unlock()
	}, nil
}

// removeBenchLeftovers removes the folders prefix<digits> under dir that
// hold scratchMark and whose lock no process holds, and lists them.
func removeBenchLeftovers(dir, prefix string) ([]string, error) {
	if !flock.Supported {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil // MkdirTemp says what is wrong with dir
	}
	var left []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		// The mark is written only once the lock is held: with the mark
		// and the lock free, the run that made the folder is gone.
		if st, err := os.Lstat(filepath.Join(p, scratchMark)); err != nil || !st.Mode().IsRegular() {
			continue
		}
		lock, err := flock.TryLockDir(p)
		if err != nil {
			continue // running (flock.ErrHeld), gone, or not ours to lock
		}
		err = os.RemoveAll(p)
		lock.Unlock()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return left, fmt.Errorf("remove %s, left by an interrupted bench: %w", p, err)
		}
		left = append(left, p)
	}
	return left, nil
}
