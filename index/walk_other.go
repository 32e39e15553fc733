//go:build !unix

package index

import "io/fs"

// fileID identifies a directory for loop detection; on systems without
// device and inode numbers, walk relies on its depth limit instead.
type fileID struct{ dev, ino uint64 }

func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }

// devOf reports no device here, so no folder is seen as a mount point:
// a disk that is away is recognised only as a root that lists nothing or
// no longer exists, or a folder that cannot be read.
func devOf(fs.FileInfo) (uint64, bool) { return 0, false }
