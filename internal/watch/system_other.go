//go:build !linux

package watch

import (
	"errors"
	"syscall"
)

// networkFS cannot tell a network filesystem here: every folder is watched
// and the rescan catches what their events miss.
func networkFS(dir string) string { return "" }

// isLimit reports whether a watch failed for the system's limit on open
// files (kqueue holds one descriptor a watched path).
func isLimit(err error) bool { return errors.Is(err, syscall.EMFILE) }

// limitAdvice says how to raise the limit.
func limitAdvice() string {
	return "the system's limit on open files is reached (each watched folder holds one); raise it with `ulimit -n`"
}

// mountPoints lists no mount points here: a disk mounted or unmounted
// below a root is found by the rescan.
func mountPoints() []Mount { return nil }
