//go:build unix

package index

import (
	"io/fs"
	"syscall"
)

// fileID identifies a directory for loop detection.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

// devOf returns the device a file is on, for mount-point detection within
// one walk (device numbers are never kept: a USB disk gets a new one each
// time it is plugged in).
func devOf(fi fs.FileInfo) (uint64, bool) {
	id, ok := idOf(fi)
	return id.dev, ok
}
