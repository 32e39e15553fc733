package store

import (
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/internal/userdir"
)

// DefaultPath is where clipidx keeps the index when no path is given:
// $CLIPIDX_DB, else $XDG_DATA_HOME/clipidx/index.db (when absolute), else
// ~/.local/share/clipidx/index.db (clipidx-index.db in the working folder
// when there is no home).
func DefaultPath() string {
	if p := os.Getenv("CLIPIDX_DB"); p != "" {
		return p
	}
	d, err := userdir.Data()
	if err != nil {
		return "clipidx-index.db"
	}
	return filepath.Join(d, "clipidx", "index.db")
}
