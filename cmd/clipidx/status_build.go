package main

import (
	"fmt"
	"io"
	"time"

	"github.com/clipidx/clipidx/store"
)

// printBuildState prints the "building:" line of status for a build that
// runs now, from any process; nothing when none runs.
func printBuildState(w io.Writer, st store.BuildState) {
	if !st.Running {
		return
	}
	fmt.Fprintf(w, "building:    %s, by %s\n", buildProgressText(st.Progress), st.Holder)
}

// buildProgressText is "indexing 37 of 500 new or changed files (2
// failed), 3.1 files/s, 2m30s left, in /photos", or "scanning the
// folders" before the first record.
func buildProgressText(p *store.Progress) string {
	if p == nil || p.Phase == "scan" {
		return "scanning the folders"
	}
	s := fmt.Sprintf("indexing %d of %d new or changed %s", p.Done, p.Total, plural(p.Total, "file", "files"))
	if p.Failed > 0 {
		s += fmt.Sprintf(" (%d failed)", p.Failed)
	}
	if p.Rate > 0 {
		s += fmt.Sprintf(", %.1f files/s", p.Rate)
		if p.ETA > 0 {
			s += fmt.Sprintf(", %v left", time.Duration(p.ETA*float64(time.Second)).Round(time.Second))
		}
	}
	if p.Root != "" {
		s += ", in " + p.Root
	}
	return s
}
