package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/clipidx/clipidx/internal/flock"
)

// An export that fails or is stopped removes what it created (undo); one
// that is killed leaves its temporary files (.NAME.tmp-*, see createOut)
// and the empty folders it made, which the next export into the same
// output removes (leftovers) instead of counting them as a user's files.

// tempPart is the temporary name of a clip-retrieval file being written.
var tempPart = regexp.MustCompile(`^\.(img_emb|text_emb|metadata)_[0-9]+\.(npy|parquet)\.tmp-[0-9a-z]+$`)

// leftovers sorts the entries top of a clip-retrieval output folder dir:
// what a killed export left (its temporary files, then the img_emb,
// text_emb and metadata folders holding nothing else), in removal order,
// and the first other entry, relative to dir ("" when there is none).
func leftovers(dir string, top []fs.DirEntry) (left []string, other string, err error) {
	for _, e := range top {
		sub := e.Name()
		if !e.IsDir() || (sub != "img_emb" && sub != "text_emb" && sub != "metadata") {
			return nil, sub, nil
		}
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return nil, "", err
		}
		for _, f := range entries {
			m := tempPart.FindStringSubmatch(f.Name())
			if m == nil || !f.Type().IsRegular() || m[1] != sub || (m[2] == "npy") != (sub != "metadata") {
				return nil, filepath.Join(sub, f.Name()), nil
			}
			left = append(left, filepath.Join(dir, sub, f.Name()))
		}
		left = append(left, filepath.Join(dir, sub))
	}
	return left, "", nil
}

// removeLeftovers removes paths (files, then the folders that held them).
func removeLeftovers(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s, left by an interrupted export: %w", p, err)
		}
	}
	return nil
}

// faissLeftovers lists the temporary files a killed FaissFlat into path
// left beside it.
func faissLeftovers(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	var left []string
	for _, e := range entries {
		n := e.Name()
		for _, final := range []string{base, base + ".paths"} {
			rest, ok := strings.CutPrefix(n, "."+final+".tmp-")
			if ok && rest != "" && strings.Trim(rest, "0123456789abcdefghijklmnopqrstuvwxyz") == "" && e.Type().IsRegular() {
				p := filepath.Join(dir, n)
				if flock.Busy(p) { // being written (createOut holds it)
					return nil, fmt.Errorf("%s: %w (%s)", path, ErrBusy, n)
				}
				left = append(left, p)
			}
		}
	}
	return left, nil
}

// undo removes the files an export published and then the folders it
// created (innermost first; only empty ones: rmdir), and returns what it
// removed. A path it could not remove is joined to err, which it returns.
func undo(files, folders []string, err error) ([]string, error) {
	var removed []string
	for _, p := range files {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("could not remove %s, written by this export: %w", p, rerr))
			continue
		}
		removed = append(removed, p)
	}
	for i := len(folders) - 1; i >= 0; i-- {
		if rerr := os.Remove(folders[i]); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("could not remove the folder %s, made by this export: %w", folders[i], rerr))
			continue
		}
		removed = append(removed, folders[i])
	}
	return removed, err
}
