package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate sets aside n bytes of f on disk without writing them
// (fallocate): the file system refuses it at once (ENOSPC, EDQUOT) when
// it has not the room, quotas included. ok is false when the file system
// cannot do it (EOPNOTSUPP: tmpfs before Linux 3.5, some network file
// systems), and the caller writes the bytes instead.
func allocate(f *os.File, n int64) (ok bool, err error) {
	for {
		err = unix.Fallocate(int(f.Fd()), 0, 0, n)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return false, nil
	}
	return err == nil, err
}

// noSpace reports whether err says the file system has no room (for the
// user: EDQUOT).
func noSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}
