// Package userdir names the user's cache and data folders as the XDG Base
// Directory specification says: $XDG_CACHE_HOME or $XDG_DATA_HOME when it
// is an absolute path, else the folder under $HOME. A relative value is
// invalid by the specification and ignored: used as it is, it would put
// a 3.9 GB model, the caches or the index in whatever folder a command
// was started from (os.UserCacheDir instead gives up, and nothing would be
// kept). On Windows, macOS and Plan 9 the cache folder is the system's
// (os.UserCacheDir).
package userdir

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// ErrNone is returned when the environment names no folder: no valid
// XDG variable and no $HOME.
var ErrNone = errors.New("no user folder: set HOME (or XDG_CACHE_HOME and XDG_DATA_HOME to absolute paths)")

// Cache is the user's cache folder.
func Cache() (string, error) {
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		return os.UserCacheDir()
	}
	return xdg("XDG_CACHE_HOME", ".cache")
}

// Data is the user's data folder: $XDG_DATA_HOME, else ~/.local/share
// (on every system, as clipidx has always kept its index there).
func Data() (string, error) {
	return xdg("XDG_DATA_HOME", filepath.Join(".local", "share"))
}

// xdg is $env when absolute, else $HOME/under.
func xdg(env, under string) (string, error) {
	if d := os.Getenv(env); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", ErrNone
	}
	return filepath.Join(home, under), nil
}
