//go:build unix

package web

import (
	"syscall"
	"time"
)

// processCPU is the CPU time of this process (user + system): on a shared
// machine it measures the work where wall time also measures waiting.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
