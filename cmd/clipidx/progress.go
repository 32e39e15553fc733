package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// minRateInterval is how long a phase runs before its rate and ETA are
// shown: over a shorter interval the rate is noise (the first frame after
// a phase starts would divide by microseconds).
const minRateInterval = time.Second

// progress is a bar with rate and ETA on stderr, drawn only when stderr is
// a terminal; otherwise (and for a nil *progress) every method does nothing,
// so callers need no checks.
type progress struct {
	bar   *progressbar.ProgressBar
	total int64
	unit  string
	desc  string    // the current phase
	since time.Time // start of the phase
	from  int       // count at since
	drawn time.Time // last time the description was redrawn
}

// stderrIsTerminal reports whether a progress bar may be drawn.
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// newProgress starts a bar counting items ("files", "vectors"); a total
// below zero draws a spinner until setTotal gives one.
func newProgress(desc, unit string, total int64) *progress {
	if !stderrIsTerminal() {
		return nil
	}
	return &progress{total: total, unit: unit, desc: desc, since: time.Now(), bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false), // rateText does it, once meaningful
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetWidth(28),
		progressbar.OptionFullWidth(),
		progressbar.OptionClearOnFinish(),
	)}
}

// rateText is "12.5 files/s, ETA 3m20s" for done items of total (total ≤ 0:
// unknown, no ETA) after elapsed, or "" before minRateInterval.
func rateText(done int, total int64, elapsed time.Duration, unit string) string {
	if elapsed < minRateInterval || done <= 0 {
		return ""
	}
	r := float64(done) / elapsed.Seconds()
	s := fmt.Sprintf("%.1f %s/s", r, unit)
	if total > 0 && int64(done) <= total {
		eta := time.Duration(float64(total-int64(done)) / r * float64(time.Second))
		s += ", ETA " + eta.Round(time.Second).String()
	}
	return s
}

// set moves the bar to n.
func (p *progress) set(n int) {
	if p == nil {
		return
	}
	p.bar.Set64(int64(n))
	if now := time.Now(); now.Sub(p.drawn) >= 500*time.Millisecond {
		p.drawn = now
		total := p.total
		if total > 0 {
			total -= int64(p.from)
		}
		if r := rateText(n-p.from, total, now.Sub(p.since), p.unit); r != "" {
			p.bar.Describe(p.desc + " (" + r + ")")
		}
	}
}

// describe changes the text before the bar (the current phase); a new
// phase starts its rate afresh.
func (p *progress) describe(s string) {
	if p != nil && s != p.desc {
		p.desc, p.since, p.drawn = s, time.Now(), time.Time{}
		p.bar.Describe(s)
	}
}

// setTotal changes the end of the bar, and resets its rate and ETA.
func (p *progress) setTotal(n int) {
	if p != nil && int64(n) != p.total {
		p.total = int64(n)
		p.bar.ChangeMax64(int64(n))
		p.bar.Reset()
		p.since, p.from, p.drawn = time.Now(), 0, time.Time{}
	}
}

// done clears the bar.
func (p *progress) done() {
	if p != nil {
		p.bar.Finish()
		p.bar.Exit()
	}
}
