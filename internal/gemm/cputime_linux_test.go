package gemm

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUTime returns the CPU time consumed by the calling OS thread, or
// false when the clock is unavailable.
func threadCPUTime() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// processCPUTime returns the CPU time consumed by all threads of the
// process (0 when the clock is unavailable).
func processCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
