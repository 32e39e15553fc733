//go:build netbsd || solaris || illumos

package hub

import "golang.org/x/sys/unix"

// diskFree returns the bytes available to this user on dir's file system.
func diskFree(dir string) (int64, bool) {
	var st unix.Statvfs_t
	if err := unix.Statvfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Frsize), true
}
