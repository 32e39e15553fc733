// Package madedirs creates folders as os.MkdirAll does and remembers which
// it made, so that a command that fails or is stopped can remove exactly
// those, and never a folder that was there before it.
package madedirs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// MkdirAll creates dir and its missing parents like os.MkdirAll, and
// returns the folders it created, outermost first. A folder another
// process makes meanwhile is not counted as made.
func MkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue // made meanwhile by another process: not ours to remove
		}
		if err != nil {
			return made, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}
