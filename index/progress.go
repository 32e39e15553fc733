package index

import (
	"slices"
	"time"

	"github.com/clipidx/clipidx/store"
)

// The build records how far it got in the index (store.Progress) with
// each commit, so that status, the web page and another process see a
// running build: the phase, files found, done, failed, the rate, the time
// left and the root being read.

// progressState is what the builder keeps for its progress record.
type progressState struct {
	roots   []string  // the build's roots, sorted
	found   int       // files the walk found
	started time.Time // the build's start
	indexAt time.Time // the index phase's start
	last    string    // path of the last file handled
}

// progress is the record of the builder now, in phase.
func (b *builder) progress(phase string) store.Progress {
	p := store.Progress{Phase: phase, Found: b.prog.found, Total: b.total, Done: b.done, Failed: b.sum.Failed,
		Started: b.prog.started.UTC().Format(time.RFC3339)}
	if i := slices.IndexFunc(b.prog.roots, func(r string) bool { return store.Within(b.prog.last, r) }); i >= 0 && b.prog.last != "" {
		p.Root = b.prog.roots[i]
	}
	if el := time.Since(b.prog.indexAt).Seconds(); !b.prog.indexAt.IsZero() && el > 0 && b.done > 0 {
		p.Rate = float64(b.done) / el
		p.ETA = float64(b.total-b.done) / p.Rate
	}
	return p
}

// startIndexPhase records, before the first file, that total files are to
// be handled (a build with nothing to do writes nothing here).
func (b *builder) startIndexPhase(found, total int) error {
	b.prog.found, b.total, b.prog.indexAt = found, total, time.Now()
	if total == 0 {
		return nil
	}
	return b.w.WriteProgress(b.progress("index"))
}
