package hf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// CheckFolder returns ErrNoModel for an absent or empty folder.
func CheckFolder(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: folder %s does not exist", core.ErrNoModel, dir)
	}
	if err != nil {
		return fmt.Errorf("read model folder %s: %w", dir, err)
	}
	if len(ents) == 0 {
		return fmt.Errorf("%w: folder %s is empty", core.ErrNoModel, dir)
	}
	return nil
}

// errMissing is the error of a model file that is not there, with what to
// do when a download of it was cut short (its .part is beside it).
func errMissing(path string) error {
	if _, err := os.Stat(path + ".part"); err == nil {
		return fmt.Errorf("%w: %s is missing: its download was cut short (%s.part); run `clipidx model pull` again to finish it", core.ErrBadModel, path, filepath.Base(path))
	}
	return fmt.Errorf("%w: %s is missing", core.ErrBadModel, path)
}
