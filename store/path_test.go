package store

import (
	"path/filepath"
	"testing"
)

func TestDefaultPath(t *testing.T) {
	t.Setenv("CLIPIDX_DB", "/x/my.db")
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := DefaultPath(); got != "/x/my.db" {
		t.Errorf("with CLIPIDX_DB: %q", got)
	}
	t.Setenv("CLIPIDX_DB", "")
	if got := DefaultPath(); got != filepath.Join("/data", "clipidx", "index.db") {
		t.Errorf("with XDG_DATA_HOME: %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath(); got != filepath.Join("/home/u", ".local", "share", "clipidx", "index.db") {
		t.Errorf("from HOME: %q", got)
	}
}
