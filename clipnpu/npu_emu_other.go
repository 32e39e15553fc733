//go:build !unix

package clipnpu

// releasePages does nothing where the bundle is read into memory.
func releasePages(b []byte) {}
