//go:build !linux

package rss

import "time"

func peak() (int64, error)            { return 0, ErrUnsupported }
func current() (int64, error)         { return 0, ErrUnsupported }
func cpuTime() (time.Duration, error) { return 0, ErrUnsupported }
