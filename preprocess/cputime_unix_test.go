//go:build unix

package preprocess

import (
	"syscall"
	"time"
)

// processCPU is the CPU time of this process and of the children it has
// waited for (ffmpeg decoding a HEIC), user + system. On a shared machine
// it measures work where wall time also measures waiting.
func processCPU() time.Duration {
	var t time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) != nil {
			return 0
		}
		t += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return t
}
