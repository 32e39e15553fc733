//go:build !unix

package npu

// releasePages does nothing where the bundle is read into memory.
func releasePages(b []byte) {}
