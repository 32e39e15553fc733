package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRateText(t *testing.T) {
	for _, tc := range []struct {
		done    int
		total   int64
		elapsed time.Duration
		want    string
	}{
		{30, 100, 1 * time.Microsecond, ""}, // first frame: no absurd rate
		{30, 100, 999 * time.Millisecond, ""},
		{0, 100, 5 * time.Second, ""},
		{30, 100, 2 * time.Second, "15.0 files/s, ETA 5s"},
		{30, -1, 2 * time.Second, "15.0 files/s"},
		{100, 100, 4 * time.Second, "25.0 files/s, ETA 0s"},
	} {
		if got := rateText(tc.done, tc.total, tc.elapsed, "files"); got != tc.want {
			t.Errorf("rateText(%d, %d, %v) = %q, want %q", tc.done, tc.total, tc.elapsed, got, tc.want)
		}
	}
}

// TestAnnounceStop: a build that ends (finished closed, then the deferred
// stop cancels ctx) must not claim it is stopping; a real signal must.
func TestAnnounceStop(t *testing.T) {
	for range 200 { // the old select chose at random between the two
		ctx, cancel := context.WithCancel(context.Background())
		finished := make(chan struct{})
		close(finished)
		cancel()
		var buf bytes.Buffer
		announceStop(ctx, cancel, finished, &buf)
		if buf.Len() != 0 {
			t.Fatalf("a finished build announced %q", buf.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	stopped := false
	announceStop(ctx, func() { stopped = true }, make(chan struct{}), &buf)
	if !stopped || !strings.Contains(buf.String(), "stopping") {
		t.Errorf("a signal: stop called %v, said %q", stopped, buf.String())
	}
}

// TestBadFlagValues: out-of-range counts and weights are usage errors
// (exit 2) with a message naming the problem, before anything is opened.
func TestBadFlagValues(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "i.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "-k", "0", "cat"}, "-k"},
		{[]string{"search", "-k", "-3", "cat"}, "-k"},
		{[]string{"--threads", "-1", "search", "cat"}, "--threads"},
		{[]string{"build", "--workers", "-1", "."}, "--workers"},
		{[]string{"build", "--batch", "-2", "."}, "--batch"},
		{[]string{"--threads", "-2", "build", "."}, "--threads"},
		{[]string{"search", "+nan:dog"}, "invalid query weight"},
		{[]string{"search", "cat", "+inf:dog"}, "invalid query weight"},
		{[]string{"search", "+1e40:dog"}, "invalid query weight"},
	} {
		_, errs, code := e2eRun(t, bin, append([]string{"--db", db}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", tc.args, code, errs, tc.want)
		}
	}
}

// TestEnvValueNamed: a bad value of CLIPIDX_THREADS, CLIPIDX_DEVICE,
// CLIPIDX_WEIGHTS or CLIPIDX_PRECISION was reported as the flag's
// ("--threads takes a count ≥ 0"), which the user never gave; the
// variable is named now, and the flag when both are given.
func TestEnvValueNamed(t *testing.T) {
	for env, bad := range map[string]string{"CLIPIDX_THREADS": "-1", "CLIPIDX_DEVICE": "gpu", "CLIPIDX_WEIGHTS": "f8", "CLIPIDX_PRECISION": "fp64"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, bad)
			_, errs, code := runCLI(t, "status")
			if code != 2 || !strings.Contains(errs, env+" takes") {
				t.Errorf("%s=%s: exit %d, stderr %q; want exit 2 naming %s", env, bad, code, errs, env)
			}
			flag := "--" + strings.ToLower(strings.TrimPrefix(env, "CLIPIDX_"))
			_, errs, code = runCLI(t, flag+"="+bad, "status")
			if code != 2 || !strings.Contains(errs, flag+" takes") {
				t.Errorf("%s=%s and %s=%s: exit %d, stderr %q; want the flag named", env, bad, flag, bad, code, errs)
			}
		})
	}
}

// TestRelativeXDGNoted: a relative XDG_DATA_HOME or XDG_CACHE_HOME is
// ignored (the XDG specification), which moves the index or the model of a
// setup that relied on it: every command says so.
func TestRelativeXDGNoted(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", "data")
	_, errs, _ := runCLI(t, "version")
	if !strings.Contains(errs, `XDG_DATA_HOME="data" is not an absolute path`) {
		t.Errorf("stderr %q, want the relative XDG_DATA_HOME named", errs)
	}
	t.Setenv("XDG_DATA_HOME", "/abs/data")
	if _, errs, _ := runCLI(t, "version"); strings.Contains(errs, "XDG") {
		t.Errorf("an absolute XDG_DATA_HOME: stderr %q", errs)
	}
}
