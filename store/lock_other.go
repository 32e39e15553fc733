//go:build !unix

package store

import (
	"os"
	"time"
)

// lockFile on systems without flock only creates the file: two concurrent
// builds are not prevented there (each commit is still atomic).
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}

func unlockFile(f *os.File) error { return f.Close() }

// lockShared does nothing where there is no flock (see lockFile).
func lockShared(f *os.File, timeout time.Duration) error { return nil }

// enterGate has no gate to take where there is no flock (see lockFile).
func enterGate(path string, writer bool, deadline time.Time) (*os.File, error) { return nil, nil }

func leaveGate(f *os.File) {}
