package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/preprocess"
)

// TestBuildHelpListsTodaysFormats: build --help names every format the
// decoder reads (it once listed six, without HEIC, AVIF or RAW) and offers
// --retry-failed.
func TestBuildHelpListsTodaysFormats(t *testing.T) {
	c := newBuildCmd()
	for _, id := range preprocess.Formats() {
		name := strings.ToUpper(id)
		for _, f := range formatNames {
			if f.id == id {
				name = f.name
			}
		}
		if !strings.Contains(c.Long, name) {
			t.Errorf("build --help does not name %s (%s)", name, id)
		}
	}
	for _, want := range []string{"HEIC/HEIF", "AVIF", "camera RAW"} {
		if !strings.Contains(c.Long, want) {
			t.Errorf("build --help does not name %s", want)
		}
	}
	if c.Flags().Lookup("retry-failed") == nil {
		t.Error("build has no --retry-failed")
	}
	if got := formatList([]string{"png", "jpeg", "qoi"}); got != "JPEG, PNG and QOI" {
		t.Errorf("formatList = %q", got)
	}
}

// TestBuildSummarySaysWhatIsRetried: a failure that is not the file's is
// listed as not recorded and to be retried; the file's own is listed as
// before.
func TestBuildSummarySaysWhatIsRetried(t *testing.T) {
	c := newBuildCmd()
	var out, errw bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errw)
	printBuildSummary(c, &index.Summary{Failed: 2, Failures: []index.Failure{
		{Path: "/p/a.jpg", Error: "read: input/output error", Transient: true},
		{Path: "/p/b.jpg", Error: "decode /p/b.jpg: corrupt image"},
	}})
	want := "failed, not recorded (will be retried): /p/a.jpg: read: input/output error\nfailed: decode /p/b.jpg: corrupt image\n"
	if errw.String() != want {
		t.Errorf("printed %q, want %q", errw.String(), want)
	}
}

// TestBuildSummaryCountsPathsNotRead: a folder or link the walk could
// not read is listed with the failures but is no failed file: the summary
// line says it follows, so "failed 1" does not stand above two lines.
func TestBuildSummaryCountsPathsNotRead(t *testing.T) {
	c := newBuildCmd()
	var out, errw bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errw)
	printBuildSummary(c, &index.Summary{Added: 3, Failed: 1, Failures: []index.Failure{
		{Path: "/p/b.jpg", Error: "decode /p/b.jpg: corrupt image"},
		{Path: "/p/locked", Error: "unreachable; its entries are kept"},
	}})
	if want := "added 3, updated 0, unchanged 0, reused 0, removed 0, failed 1 (and 1 path not read, listed below)\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	out.Reset()
	printBuildSummary(c, &index.Summary{Added: 3})
	if want := "added 3, updated 0, unchanged 0, reused 0, removed 0, failed 0\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// TestInterruptedMessage: a stopped build says its finished work is
// saved, unless its last commit failed, which it then names.
func TestInterruptedMessage(t *testing.T) {
	if e := interrupted(context.Canceled); e.code != 130 || !strings.Contains(e.err.Error(), "finished work is saved") {
		t.Errorf("plain stop: %d %v", e.code, e.err)
	}
	e := interrupted(errors.Join(errors.New("commit to /x/index.db: no space left on device"), context.Canceled))
	if msg := e.err.Error(); e.code != 130 || strings.Contains(msg, "is saved") || !strings.Contains(msg, "(commit to /x/index.db: no space left on device)") ||
		strings.Contains(msg, "context canceled") {
		t.Errorf("stop with a failed commit: %d %q", e.code, msg)
	}
}
