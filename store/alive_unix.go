//go:build unix

package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processAlive reports whether a process with this id runs on this host
// (one owned by another user counts).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
