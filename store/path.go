package store

import (
	"os"
	"path/filepath"
)

// DefaultPath is where clipidx keeps the index when no path is given:
// $CLIPIDX_DB, else $XDG_DATA_HOME/clipidx/index.db, else
// ~/.local/share/clipidx/index.db (clipidx-index.db in the working folder
// when there is no home).
func DefaultPath() string {
	if p := os.Getenv("CLIPIDX_DB"); p != "" {
		return p
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "clipidx", "index.db")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "clipidx-index.db"
	}
	return filepath.Join(home, ".local", "share", "clipidx", "index.db")
}
