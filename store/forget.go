package store

import (
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Forget removes the records of every file at or under each of paths
// (absolute, clean; files or folders, on disk or long gone) and frees the
// vectors no other file uses, under the build lock, in transactions of
// forgetBatch records (one stopped part way leaves the rest, which the
// same Forget again removes). It
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
	// The records to remove, as the index holds them now: the build lock
	// keeps every other writer off until the last transaction.
	var gone []string
	dim := 0
	err = w.update(func(tx *bolt.Tx) error {
		id, err := readMeta(tx)
		if err != nil {
			return err
		}
		dim = id.Dim
		s := &Snapshot{tx: tx, id: id}
		seen := map[string]bool{}
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
		return nil
	})
	if err != nil {
		return 0, err
	}
	// In transactions of forgetBatch records: within one, bbolt keeps the
	// nodes it changes whole until the commit, so the vectors queued and
	// freed in the same transaction, and the references emptied beside
	// them, cost each delete a pass over all the others (quadratic: 100k
	// records freed took 70 s of CPU). The shards' records go first (a
	// shard then read again by a build finds its samples), the folders'
	// registry entries last.
	n := 0
	for lo := 0; lo == 0 || lo < len(gone); lo += forgetBatch {
		part := gone[lo:min(lo+forgetBatch, len(gone))]
		last := lo+forgetBatch >= len(gone)
		err = w.update(func(tx *bolt.Tx) error {
			t := newWtx(tx, dim)
			if lo == 0 {
				for _, p := range paths {
					if err := t.applyExtra(op{kind: opShard, path: p, file: File{Size: -1}}); err != nil {
						return err
					}
				}
			}
			for _, f := range part {
				if err := t.apply(op{kind: opDelete, path: f}); err != nil {
					return err
				}
			}
			if _, err := t.collect(0); err != nil {
				return err
			}
			if last {
				if err := dropWithin(tx, paths); err != nil {
					return err
				}
			}
			return t.flush()
		})
		if err != nil {
			return n, err
		}
		n += len(part)
	}
	return n, nil
}

// forgetBatch is how many records one of Forget's transactions removes.
const forgetBatch = 2048
