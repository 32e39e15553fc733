//go:build unix

package watch

import (
	"os"
	"syscall"
)

// rootID is what RootPoll compares: whether a root is a folder, and which
// folder on which device (a disk mounted on it changes both).
type rootID struct {
	dir      bool
	dev, ino uint64
}

// rootOf looks at root, following a link.
func rootOf(root string) rootID {
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return rootID{}
	}
	id := rootID{dir: true}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return id
}
