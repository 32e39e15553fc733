//go:build unix

package npu

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// releasePages tells the kernel this process no longer needs the whole
// pages inside b: after the emulator has decoded a packed weight matrix
// from the bundle's read-only mapping, its pages leave the resident set
// (they stay in the page cache and fault back in from the file if read).
// Only pages entirely inside b are released, so neighbouring tensors are
// untouched. b must not be read for its values afterwards: should the
// bundle have been read into memory instead of mapped, those pages read as
// zeros.
func releasePages(b []byte) {
	ps := uintptr(os.Getpagesize())
	if len(b) < int(2*ps) {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + ps - 1) &^ (ps - 1)
	hi := (start + uintptr(len(b))) &^ (ps - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_DONTNEED) // a hint: failure only costs memory
}
