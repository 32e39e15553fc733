//go:build !linux

package gemm

import "time"

func threadCPUTime() (time.Duration, bool) { return 0, false }

func processCPUTime() time.Duration { return 0 }
