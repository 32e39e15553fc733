//go:build !linux

package store

import (
	"errors"
	"os"
	"syscall"
)

// allocate cannot set space aside without writing it on this system:
// the caller writes the bytes instead.
func allocate(*os.File, int64) (bool, error) { return false, nil }

// noSpace reports whether err says the file system has no room.
func noSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
