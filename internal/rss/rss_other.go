//go:build !linux

package rss

func peak() (int64, error)    { return 0, ErrUnsupported }
func current() (int64, error) { return 0, ErrUnsupported }
