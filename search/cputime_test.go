package search

import (
	"time"

	"github.com/clipidx/clipidx/internal/rss"
)

// processCPU is the CPU time (user + system) of this process so far, all
// threads; ok is false where it cannot be read.
func processCPU() (time.Duration, bool) {
	d, err := rss.CPUTime()
	return d, err == nil
}
