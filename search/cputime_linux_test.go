package search

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) of this process so far, all
// threads; ok is false where it cannot be read.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
