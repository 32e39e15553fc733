//go:build unix

package hf

import (
	"os"
	"syscall"
)

// fileIno is the inode of a stat result: a file replaced by another of the
// same size and time is another file.
func fileIno(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
