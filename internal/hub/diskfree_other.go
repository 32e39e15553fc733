//go:build !(linux || darwin || freebsd || dragonfly || openbsd || netbsd || solaris || illumos)

package hub

// diskFree is unknown here; the write fails when the disk is full.
func diskFree(dir string) (int64, bool) { return 0, false }
