// Package rss reports the peak resident set size and the CPU time of the
// running process, for `clipidx bench model`. It is a leaf: it imports no
// other clipidx package.
package rss

import (
	"errors"
	"time"
)

// ErrUnsupported is returned when the peak RSS cannot be read on this system.
var ErrUnsupported = errors.New("rss: peak resident set size not available on this system")

// Peak returns the peak resident set size of this process in bytes (the
// high-water mark since the process started).
func Peak() (int64, error) { return peak() }

// Current returns the resident set size of this process in bytes now.
func Current() (int64, error) { return current() }

// CPUTime returns the user plus system CPU time this process has used, all
// threads together. Differences of it time work independently of how much
// other processes compete for the cores.
func CPUTime() (time.Duration, error) { return cpuTime() }
