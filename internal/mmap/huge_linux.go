package mmap

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 and arm64 transparent huge page.
const hugePage = 2 << 20

// HugePages asks the kernel to back the whole 2 MiB pages inside b with
// transparent huge pages when they are first touched (madvise
// MADV_HUGEPAGE; the system's setting is often "madvise", which gives them
// to no memory that does not ask). Large arrays streamed over and over, such
// as packed weights, then need 512 times fewer TLB entries and page faults.
// A hint: pages already touched stay as they are until the kernel's
// background collapse, errors are ignored, and elsewhere it does nothing.
// It reports how many bytes it advised.
func HugePages(b []byte) int {
	if len(b) < hugePage {
		return 0
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	head := int((hugePage - p%hugePage) % hugePage)
	if head >= len(b) {
		return 0
	}
	whole := (len(b) - head) / hugePage * hugePage
	if whole == 0 || unix.Madvise(b[head:head+whole], unix.MADV_HUGEPAGE) != nil {
		return 0
	}
	return whole
}
