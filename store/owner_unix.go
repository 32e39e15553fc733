//go:build unix

package store

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives the file at name the owner and group of fi, another
// file's (an index that a new file replaces), where this process may: an
// index root compacts stays its owner's. Without the right to, it leaves
// the file as created (the owner is then this process's user anyway).
func keepOwner(name string, fi fs.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		os.Chown(name, int(st.Uid), int(st.Gid))
	}
}
