//go:build !unix

package index

import "io/fs"

// fileID identifies a directory for loop detection; on systems without
// device and inode numbers, walk relies on its depth limit instead.
type fileID struct{ dev, ino uint64 }

func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }
