//go:build linux || darwin || freebsd || dragonfly

package hub

import "golang.org/x/sys/unix"

// diskFree returns the bytes available to this user on dir's file system.
func diskFree(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
