//go:build !unix

package watch

import "os"

// rootID is what RootPoll compares: whether a root is a folder (here the
// system gives no device and file number to tell a disk mounted on it).
type rootID struct {
	dir bool
}

// rootOf looks at root, following a link.
func rootOf(root string) rootID {
	fi, err := os.Stat(root)
	return rootID{dir: err == nil && fi.IsDir()}
}
