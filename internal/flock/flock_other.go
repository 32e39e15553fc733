//go:build !unix

package flock

import "os"

// Supported reports whether locks hold between processes here: not on
// this system, where a lock only creates its file.
const Supported = false

func tryExclusive(*os.File) error { return nil }

func unlock(*os.File) {}
