package store

import (
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Forget removes the records of every file at or under each of paths
// (absolute, clean; files or folders, on disk or long gone) and frees the
// vectors no other file uses, in one transaction under the build lock. It
// needs no model: it works on whatever identity the index has. It returns
// how many records it removed; ErrNoIndex when there is no index,
// ErrBuildRunning when a build holds the lock.
func Forget(path string, paths []string, opts WriterOptions) (int, error) {
	if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s: %w", path, ErrNoIndex)
	} else if err == nil && fi.Size() == 0 {
		// As a reader sees it; bbolt would make it a file of no buckets.
		return 0, fmt.Errorf("%s is empty (0 bytes): %w", path, ErrNoIndex)
	}
	lock, err := lockFile(path + ".lock")
	if errors.Is(err, ErrBuildRunning) {
		err = heldError(path + ".lock")
	}
	if err != nil {
		return 0, err
	}
	w := &Writer{path: path, opts: opts, lock: lock}
	defer w.Close()
	n := 0
	err = w.update(func(tx *bolt.Tx) error {
		id, err := readMeta(tx)
		if err != nil {
			return err
		}
		s := &Snapshot{tx: tx, id: id}
		seen := map[string]bool{}
		var gone []string
		for _, p := range paths {
			add := func(f string, _ File) error {
				if !seen[f] {
					seen[f] = true
					gone = append(gone, f)
				}
				return nil
			}
			if err := s.FilesWithin(p, add); err != nil { // with a tar shard's samples
				return err
			}
		}
		t := newWtx(tx, id.Dim)
		for _, p := range paths {
			if err := t.applyExtra(op{kind: opShard, path: p, file: File{Size: -1}}); err != nil {
				return err
			}
		}
		for _, f := range gone {
			if err := t.apply(op{kind: opDelete, path: f}); err != nil {
				return err
			}
		}
		if _, err := t.collect(0); err != nil {
			return err
		}
		if err := dropWithin(tx, paths); err != nil {
			return err
		}
		n = len(gone)
		return t.flush()
	})
	return n, err
}
