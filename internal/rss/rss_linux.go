//go:build linux

package rss

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// peak prefers VmHWM from /proc/self/status (bytes exact to the kB) and
// falls back to getrusage, whose ru_maxrss is in kilobytes on Linux.
func peak() (int64, error) {
	if v, err := procStatus("VmHWM:"); err == nil {
		return v, nil
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return int64(ru.Maxrss) * 1024, nil
}

func current() (int64, error) { return procStatus("VmRSS:") }

// procStatus reads one "Key:   1234 kB" line of /proc/self/status.
func procStatus(key string) (int64, error) {
	const path = "/proc/self/status"
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return parseStatus(data, key)
}

// parseStatus finds key in the text of /proc/<pid>/status and returns its
// value in bytes.
func parseStatus(data []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(key)) {
			continue
		}
		f := bytes.Fields(line[len(key):])
		if len(f) == 0 {
			return 0, fmt.Errorf("parse %s: empty value", key)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("parse %s %q: bad number", key, f[0])
		}
		mul := int64(1)
		if len(f) > 1 {
			switch string(f[1]) {
			case "kB":
				mul = 1024
			case "mB", "MB":
				mul = 1 << 20
			default:
				return 0, fmt.Errorf("parse %s: unknown unit %q", key, f[1])
			}
		}
		return n * mul, nil
	}
	return 0, fmt.Errorf("parse status: %s not found", key)
}

func cpuTime() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
