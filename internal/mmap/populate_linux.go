package mmap

import "golang.org/x/sys/unix"

// Populate maps in the pages of b, a part of a mapping made by Map, in one
// call (madvise MADV_POPULATE_READ, Linux 5.14 and later), for data that
// is about to be read whole: a page fault for every 16 pages of a
// gigabyte of packed weights costs far more. Pages the page cache lacks
// are read from the file. A hint: on an older kernel it does nothing, and
// the pages fault in as they are read.
func Populate(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_POPULATE_READ)
	}
}
