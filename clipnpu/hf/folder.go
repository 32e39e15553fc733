package hf

import (
	"errors"
	"fmt"
	"os"

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
