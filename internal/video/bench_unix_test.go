//go:build unix

package video_test

import (
	"syscall"
	"time"
)

// childCPU is the user and system time of the finished child processes
// (ffmpeg, ffprobe) of the test binary.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
