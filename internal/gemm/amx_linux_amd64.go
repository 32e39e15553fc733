//go:build linux && amd64 && !purego

package gemm

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux hands out the AMX tile data state only on request, once per
// process; a tile instruction before that raises SIGILL.
const (
	archGetXcompPerm  = 0x1022
	archReqXcompPerm  = 0x1023
	xfeatureXtiledata = 18
)

var amxPermitOnce = sync.OnceValue(func() error {
	if _, _, e := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); e != 0 {
		return fmt.Errorf("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): %w", e)
	}
	var mask uint64
	if _, _, e := unix.Syscall(unix.SYS_ARCH_PRCTL, archGetXcompPerm, uintptr(unsafe.Pointer(&mask)), 0); e != 0 {
		return fmt.Errorf("arch_prctl(ARCH_GET_XCOMP_PERM): %w", e)
	}
	if mask&(1<<xfeatureXtiledata) == 0 {
		return fmt.Errorf("arch_prctl granted features %#x without XTILEDATA", mask)
	}
	return nil
})

// amxPermit asks the kernel for the AMX tile data state (once per process)
// and reports whether it was granted.
func amxPermit() error { return amxPermitOnce() }
