//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking flock on path (created if
// needed). The kernel drops it when the process dies, so a killed build
// never leaves a stale lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, ErrBuildRunning)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

func unlockFile(f *os.File) error {
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return f.Close()
}

// lockShared takes a shared flock on f, retrying until timeout; it returns
// ErrBusy when a commit held the file for that long.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return ErrBusy
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The gate gives a commit priority over readers. flock is not fair: were
// a commit only to wait for the index's exclusive lock, readers that
// overlap (a busy serve: a page of thumbnails, clients searching) could
// hold their shared locks without a gap for minutes. So a writer first
// takes PATH.gate exclusively, and a reader passes the gate (a shared lock
// on it, held only while it takes its own lock on the index): while a
// commit waits, new readers wait at the gate, those inside finish, and the
// commit gets the index.

// enterGate takes the gate of the index at path: exclusively for a
// writer (creating the gate file), shared for a reader (no gate file, or
// one that cannot be opened, is no gate). It waits until deadline and then
// returns ErrBusy. The caller passes leaveGate what it returns.
func enterGate(path string, writer bool, deadline time.Time) (*os.File, error) {
	var f *os.File
	var err error
	how := unix.LOCK_SH
	if writer {
		f, err = os.OpenFile(path+".gate", os.O_RDWR|os.O_CREATE, 0o644)
		how = unix.LOCK_EX
	} else {
		f, err = os.Open(path + ".gate")
	}
	if err != nil {
		return nil, nil // no gate here (a read-only folder, an older index)
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, ErrBusy
			}
			if writer { // a filesystem without flock: no gate, and no file left
				os.Remove(path + ".gate")
			}
			return nil, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leaveGate releases a gate enterGate took (nil: none).
func leaveGate(f *os.File) {
	if f != nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
}
