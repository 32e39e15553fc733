package web

import (
	"time"

	"github.com/clipidx/clipidx/internal/rss"
)

// processCPU is the CPU time of this process (user + system), 0 where the
// system cannot tell: on a shared machine it measures the work where wall
// time also measures waiting.
func processCPU() time.Duration {
	d, _ := rss.CPUTime()
	return d
}
