package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/watch"
	"github.com/clipidx/clipidx/store"
)

// TestWatchLineJSON: a batch stopped while it waited for another build
// printed {"changed":1,"added":0,...,"failures":null,"offline":null}, a
// successful empty batch to a reader, and one stopped part-way looked
// complete. The arrays are [] and such a line says "interrupted".
func TestWatchLineJSON(t *testing.T) {
	for _, c := range []struct {
		what   string
		sum    *index.Summary
		err    error
		want   []string
		absent []string
	}{
		{"stopped while waiting", nil, context.Canceled,
			[]string{`"changed":1`, `"failures":[]`, `"offline":[]`, `"interrupted":true`}, []string{`"error"`, `null`}},
		{"stopped part-way", &index.Summary{Added: 120}, fmt.Errorf("build: %w", context.Canceled),
			[]string{`"added":120`, `"interrupted":true`}, []string{`"error"`, `null`}},
		{"failed", nil, errors.New("commit to i.db: no space left on device"),
			[]string{`"error":"commit to i.db: no space left on device"`, `"failures":[]`}, []string{`"interrupted"`, `null`}},
		{"done", &index.Summary{Added: 2, Complete: true}, nil,
			[]string{`"added":2`, `"failures":[]`, `"offline":[]`}, []string{`"interrupted"`, `"error"`, `null`}},
	} {
		b, err := json.Marshal(newWatchLine([]string{"/p/a.jpg"}, c.sum, c.err))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: %s, want %s in it", c.what, b, w)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(string(b), a) {
				t.Errorf("%s: %s, want no %s in it", c.what, b, a)
			}
		}
	}
}

// TestWatchReportOfflineOnce: while a folder stayed offline, every
// rescan printed its summary and the offline line again, though nothing
// changed. They are printed when the offline folders change.
func TestWatchReportOfflineOnce(t *testing.T) {
	var out, errw bytes.Buffer
	r := &watchReport{out: &out, errw: &errw, rescan: 10 * time.Minute, offline: offlineTold{}}
	disk := store.Offline{Dir: "/p/disk", Entries: 3}
	step := func(what string, within []string, sum index.Summary, wantOut, wantErr string) {
		t.Helper()
		out.Reset()
		errw.Reset()
		r.built(within, &sum, nil, time.Second)
		if got := out.String(); wantOut == "" && got != "" || !strings.Contains(got, wantOut) {
			t.Errorf("%s: printed %q, want %q", what, got, wantOut)
		}
		if got := errw.String(); wantErr == "" && got != "" || !strings.Contains(got, wantErr) {
			t.Errorf("%s: said %q, want %q", what, got, wantErr)
		}
	}
	step("the disk found away", nil, index.Summary{Unchanged: 5, Offline: []store.Offline{disk}},
		"rescan: added 0, updated 0, unchanged 5", "offline: /p/disk, 3 entries kept")
	step("a rescan, the disk still away", nil, index.Summary{Unchanged: 5, Offline: []store.Offline{disk}}, "", "")
	step("a batch elsewhere", []string{"/p/other/a.jpg"}, index.Summary{Added: 1},
		"1 changed path: added 1", "")
	step("another rescan", nil, index.Summary{Unchanged: 6, Offline: []store.Offline{disk}}, "", "")
	step("the disk back", nil, index.Summary{Unchanged: 9}, "rescan: added 0, updated 0, unchanged 9", "")
	step("a rescan, nothing offline", nil, index.Summary{Unchanged: 9}, "", "")
	step("the disk away again, found by a batch", []string{"/p"}, index.Summary{Unchanged: 6, Offline: []store.Offline{disk}},
		"1 changed path", "offline: /p/disk")
}

// TestWatchReportRescanZero: with --rescan 0 the notes promised rescans
// "every 0s" that never came. They say the folders are not rescanned.
func TestWatchReportRescanZero(t *testing.T) {
	for _, c := range []struct {
		rescan time.Duration
		want   string
	}{
		{0, "never rescanned with --rescan 0"},
		{10 * time.Minute, "rescanned only (every 10m0s)"},
	} {
		for _, n := range []watch.Note{
			{Kind: "limit", Path: "/p/d29", Err: syscall.ENOSPC, Text: "the system's limit on watched folders is reached"},
			{Kind: "network", Path: "/p/nas", Text: "NFS"},
		} {
			var errw bytes.Buffer
			r := &watchReport{errw: &errw, rescan: c.rescan}
			r.note(n)
			got := errw.String()
			if !strings.Contains(got, c.want) || strings.Contains(got, "every 0s") {
				t.Errorf("--rescan %v, note %s: %q, want %q", c.rescan, n.Kind, got, c.want)
			}
			if c.rescan == 0 && !strings.Contains(got, "set --rescan") {
				t.Errorf("--rescan 0, note %s: %q does not say to set --rescan", n.Kind, got)
			}
		}
	}
}
