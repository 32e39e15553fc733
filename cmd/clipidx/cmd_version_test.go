package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOf: the commit a build recorded is shown (once only
// "clipidx (devel)" was, whatever the build).
func TestVersionOf(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "53b8f01a2b3c4d5e6f708192a3b4c5d6e7f80912"},
		{Key: "vcs.time", Value: "2026-12-03T21:35:14Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	want := "clipidx (devel) (commit 53b8f01a2b3c, 2026-12-03T21:35:14Z, +modified; go1.26.8)"
	if got := versionOf(bi).String(); got != want {
		t.Errorf("version %q, want %q", got, want)
	}
	if got := versionOf(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}).String(); got != "clipidx v1.2.3" {
		t.Errorf("module version: %q", got)
	}
	if got := versionOf(nil).String(); got != "clipidx (devel)" {
		t.Errorf("no build info: %q", got)
	}
	out, _, code := runCLI(t, "version", "--json")
	if code != 0 || !strings.Contains(out, `"version":`) || !strings.Contains(out, `"go":"go1.`) {
		t.Errorf("version --json: exit %d, %s", code, out)
	}
}
