package main

import (
	"strings"
	"testing"
)

// TestGlobalFlagChecks: bad global values are usage errors (exit 2) for
// every command, before anything is opened.
func TestGlobalFlagChecks(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"--threads", "-1", "tokenize", "a"}, "--threads"},
		{"", []string{"--threads", "-3", "check", "."}, "--threads"},
		{"abc", []string{"tokenize", "a"}, "CLIPIDX_THREADS"},
		{"", []string{"--device", "gpu", "status"}, "--device"},
		{"", []string{"nosuch"}, "unknown command"},
		{"", []string{"tokenize", "--bogus", "a"}, "bogus"},
		{"", []string{"forget"}, "arg"},
	} {
		t.Setenv("CLIPIDX_THREADS", tc.env)
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v with CLIPIDX_THREADS=%q: exit %d, stderr %q; want exit 2 naming %s", tc.args, tc.env, code, stderr, tc.want)
		}
	}
}
