package userdir

import (
	"path/filepath"
	"runtime"
	"testing"
)

// A relative XDG_CACHE_HOME (`.cache`, or `~/.cache` from a systemd
// Environment= line, which does not expand ~) once sent the model to
// ./clipidx-models and turned every cache off, and a relative
// XDG_DATA_HOME put the index under the working folder. They are ignored
// now, as the XDG specification says, for the folder under $HOME.
func TestRelativeXDGIgnored(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" || runtime.GOOS == "plan9" {
		t.Skip("the cache folder is the system's here")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct {
		cache, data         string
		wantCache, wantData string
	}{
		{"", "", filepath.Join(home, ".cache"), filepath.Join(home, ".local", "share")},
		{".cache", "data", filepath.Join(home, ".cache"), filepath.Join(home, ".local", "share")},
		{"~/.cache", "~/.local/share", filepath.Join(home, ".cache"), filepath.Join(home, ".local", "share")},
		{"/var/cache/me", "/srv/data", "/var/cache/me", "/srv/data"},
	} {
		t.Setenv("XDG_CACHE_HOME", tc.cache)
		t.Setenv("XDG_DATA_HOME", tc.data)
		if got, err := Cache(); err != nil || got != tc.wantCache {
			t.Errorf("XDG_CACHE_HOME=%q: Cache() = %q, %v; want %q", tc.cache, got, err, tc.wantCache)
		}
		if got, err := Data(); err != nil || got != tc.wantData {
			t.Errorf("XDG_DATA_HOME=%q: Data() = %q, %v; want %q", tc.data, got, err, tc.wantData)
		}
	}
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "rel")
	if got, err := Cache(); err == nil {
		t.Errorf("no HOME, relative XDG_CACHE_HOME: Cache() = %q, want an error", got)
	}
}
