//go:build linux || dragonfly || openbsd || solaris || illumos

package ctime

import (
	"io/fs"
	"syscall"
)

// Of is the file's status change time in ns, 0 when unknown.
func Of(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
