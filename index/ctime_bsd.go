//go:build darwin || freebsd || netbsd

package index

import (
	"io/fs"
	"syscall"
)

// ctimeOf is the file's status change time in ns, 0 when unknown.
func ctimeOf(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Nano()
	}
	return 0
}
