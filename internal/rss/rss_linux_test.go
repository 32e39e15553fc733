//go:build linux

package rss

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStatus(t *testing.T) {
	status := []byte("Name:\tclipidx\nVmPeak:\t  200 kB\nVmHWM:\t    1536 kB\nVmRSS:\t     512 kB\nThreads:\t3\n")
	tests := []struct {
		name string
		data []byte
		key  string
		want int64
		err  bool
	}{
		{"hwm", status, "VmHWM:", 1536 * 1024, false},
		{"rss", status, "VmRSS:", 512 * 1024, false},
		{"no unit", status, "Threads:", 3, false},
		{"missing", status, "VmSwap:", 0, true},
		{"empty value", []byte("VmHWM:\n"), "VmHWM:", 0, true},
		{"bad number", []byte("VmHWM: x kB\n"), "VmHWM:", 0, true},
		{"negative", []byte("VmHWM: -4 kB\n"), "VmHWM:", 0, true},
		{"bad unit", []byte("VmHWM: 4 pages\n"), "VmHWM:", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus(tc.data, tc.key)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPeakGrows touches 64 MiB and checks that the high-water mark covers it
// and never falls below the current RSS.
func TestPeakGrows(t *testing.T) {
	const n = 64 << 20
	buf := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		buf[i] = 1
	}
	// Current first: the peak read after it can only be higher.
	c, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Peak()
	if err != nil {
		t.Fatal(err)
	}
	if p < n {
		t.Fatalf("peak %d bytes after touching %d", p, n)
	}
	if p < c {
		t.Fatalf("peak %d below current %d", p, c)
	}
	_ = buf[n-1]
}

// TestCPUTimeGrows burns a fixed amount of this process's CPU time, measured
// by the kernel's per-process CPU clock (CLOCK_PROCESS_CPUTIME_ID, a source
// independent of getrusage), and checks that CPUTime moved by at least that
// much and never backwards. The loop ends on CPU time the process really
// consumed, not on wall time, so a busy machine only makes it take longer.
func TestCPUTimeGrows(t *testing.T) {
	const burn = 50 * time.Millisecond
	clock := func() time.Duration {
		t.Helper()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
			t.Fatalf("clock_gettime(CLOCK_PROCESS_CPUTIME_ID): %v", err)
		}
		return time.Duration(ts.Nano())
	}
	a, err := CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	start := clock()
	x := 1.0
	for clock()-start < burn {
		for i := 0; i < 1000; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
	spent := clock() - start
	b, err := CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	// Both count the same scheduler runtime, but getrusage may not yet
	// include the running thread's last slice (up to a scheduler tick,
	// 10 ms at HZ=100): ask for half, which a wrong unit or a missing
	// user-time term still fails by far.
	if b-a < spent/2 {
		t.Fatalf("CPU time went from %v to %v (+%v) while the process clock counted %v of work (x=%g)", a, b, b-a, spent, x)
	}
}
