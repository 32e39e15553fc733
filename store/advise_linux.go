//go:build linux

package store

import (
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// adviseReader asks for a reader's mapping of the index to be backed by
// 2 MiB pages (MADV_HUGEPAGE; bbolt's MADV_RANDOM stays). The kernel then
// reads what is not in the page cache in 2 MiB folios, and any later
// mapping of those, in any process, takes one fault per 2 MiB instead of
// one per 64 KiB. On Intel Xeon (Emerald Rapids, family 6 model 0xcf),
// 2 vCPUs, with a 1M x 1024 index: opening it and searching, as each
// `clipidx search` and each request of `clipidx serve` does
// (BenchmarkSearch1MOpen), took 1.22-1.36x numpy's X @ q from 4 KiB folios
// (36,000 faults) and 0.60-0.79x from 2 MiB ones (3,100 faults), about a
// search in a reader kept open; a search of the uncached index took
// 11.9-14.3 s without the hint (bbolt's MADV_RANDOM reads it one 4 KiB
// page per fault) and 2.8-3.5 s with it.
// Folios already cached (a build writes small ones) stay as they are. The
// cost: an uncached index is read whole, its exact float32 halves too,
// not only the 16-bit halves a scan reads. A hint: failure only costs
// speed.
func adviseReader(db *bolt.DB, path string) {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	n := (uintptr(fi.Size()) + page - 1) &^ (page - 1)
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, db.Info().Data, n, unix.MADV_HUGEPAGE)
}
