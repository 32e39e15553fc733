// Package flock takes advisory locks on files between processes: flock(2)
// where the system has it, nothing elsewhere (Supported says which). The
// kernel drops a lock when its process dies, so a killed process never
// leaves a stale one.
package flock

import (
	"errors"
	"os"
	"time"
)

// ErrHeld is returned when another process holds the lock.
var ErrHeld = errors.New("held by another process")

// File is a lock taken on a file; Unlock releases it.
type File struct{ f *os.File }

// TryLock takes an exclusive lock on path (created if needed, mode 0644)
// without waiting: ErrHeld when another process holds it.
func TryLock(path string) (*File, error) {
	return tryOpened(os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644))
}

// tryOpened locks the file just opened (f, err) without waiting, or
// closes it.
func tryOpened(f *os.File, err error) (*File, error) {
	if err != nil {
		return nil, err
	}
	if !Supported {
		// No lock to hold, and no handle kept open: on Windows one would
		// stop the folder it names from being removed.
		f.Close()
		return &File{}, nil
	}
	if err := tryExclusive(f); err != nil {
		f.Close()
		return nil, err
	}
	return &File{f}, nil
}

// Lock is TryLock retried until timeout has passed, then ErrHeld.
func Lock(path string, timeout time.Duration) (*File, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, err := TryLock(path)
		if !errors.Is(err, ErrHeld) || !time.Now().Before(deadline) {
			return l, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TryLockDir takes an exclusive lock on the folder dir itself (which
// must exist), without waiting: ErrHeld when another process holds it.
// Nothing is created in or beside the folder.
func TryLockDir(dir string) (*File, error) { return tryOpened(os.Open(dir)) }

// Hold takes an exclusive lock on the open file f without waiting, held
// until f is closed: ErrHeld when another process holds one. It marks a
// file being written, which Busy then tells from a killed process's.
func Hold(f *os.File) error { return tryExclusive(f) }

// Busy reports whether another open file (of this process or another)
// holds a lock on path. A path that cannot be opened or locked for
// another reason is not busy.
func Busy(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = tryExclusive(f)
	if err == nil {
		unlock(f)
	}
	return errors.Is(err, ErrHeld)
}

// Unlock releases the lock and closes the file (the file stays).
func (l *File) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	unlock(l.f)
	l.f.Close()
	l.f = nil
}
