package main

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a bar with rate and ETA on stderr, drawn only when stderr is
// a terminal; otherwise (and for a nil *progress) every method does nothing,
// so callers need no checks.
type progress struct {
	bar   *progressbar.ProgressBar
	total int64
}

// stderrIsTerminal reports whether a progress bar may be drawn.
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// newProgress starts a bar counting items ("files", "vectors"); a total
// below zero draws a spinner until setTotal gives one.
func newProgress(desc, unit string, total int64) *progress {
	if !stderrIsTerminal() {
		return nil
	}
	return &progress{total: total, bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetWidth(28),
		progressbar.OptionFullWidth(),
		progressbar.OptionClearOnFinish(),
	)}
}

// set moves the bar to n.
func (p *progress) set(n int) {
	if p != nil {
		p.bar.Set64(int64(n))
	}
}

// describe changes the text before the bar (the current phase).
func (p *progress) describe(s string) {
	if p != nil {
		p.bar.Describe(s)
	}
}

// setTotal changes the end of the bar, and resets its rate and ETA.
func (p *progress) setTotal(n int) {
	if p != nil && int64(n) != p.total {
		p.total = int64(n)
		p.bar.ChangeMax64(int64(n))
		p.bar.Reset()
	}
}

// done clears the bar.
func (p *progress) done() {
	if p != nil {
		p.bar.Finish()
		p.bar.Exit()
	}
}
