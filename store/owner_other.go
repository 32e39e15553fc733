//go:build !unix

package store

import "io/fs"

// keepOwner does nothing where files have no Unix owner.
func keepOwner(string, fs.FileInfo) {}
