package main

import (
	"fmt"
	"io"
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
	total int64 // the phase's total; -1 while unknown
	// known is set once the phase has a total; growing once that total
	// changed during the phase (a build over tar shards counts their
	// samples as it reads them), which the bar then shows as a count
	// with its rate and no ETA.
	known, growing bool
	unit           string
	desc           string           // the current phase
	since          time.Time        // start of the phase
	from           int              // count at since
	drawn          time.Time        // last time the description was redrawn
	now            func() time.Time // the clock of the rate (a test sets its own)
}

// stderrIsTerminal reports whether a progress bar may be drawn.
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// newProgress starts a bar counting items ("files", "vectors"); a total
// below zero draws a spinner until setTotal gives one.
func newProgress(desc, unit string, total int64) *progress {
	if !stderrIsTerminal() {
		return nil
	}
	return startProgress(os.Stderr, 100*time.Millisecond, desc, unit, total)
}

// startProgress is newProgress drawing on w (a terminal), redrawn at most
// once a throttle.
func startProgress(w io.Writer, throttle time.Duration, desc, unit string, total int64) *progress {
	return &progress{total: total, known: total >= 0, unit: unit, desc: desc, since: time.Now(), now: time.Now, bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false), // rateText does it, once meaningful
		progressbar.OptionThrottle(throttle),
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
	if now := p.now(); now.Sub(p.drawn) >= 500*time.Millisecond {
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
// phase starts its rate afresh, and waits for its own total.
func (p *progress) describe(s string) {
	if p != nil && s != p.desc {
		p.desc, p.since, p.drawn = s, p.now(), time.Time{}
		p.known, p.growing = false, false
		p.bar.Describe(s)
	}
}

// setTotal gives the phase its total. The first one starts the bar, its
// rate and ETA afresh; a total that changes after it is being counted as
// the work goes, so the bar turns into a count with a rate that goes on
// (a bar always full, restarted with each item, would draw nothing).
func (p *progress) setTotal(n int) {
	switch {
	case p == nil || p.growing || p.known && int64(n) == p.total:
	case !p.known:
		p.total, p.known = int64(n), true
		p.bar.ChangeMax64(int64(n))
		p.bar.Reset() // a bar that reached the end of its last phase draws again
		p.since, p.from, p.drawn = p.now(), 0, time.Time{}
	default:
		p.total, p.growing = -1, true
		p.bar.ChangeMax64(-1)
		p.bar.Reset() // the count reached the old total: the bar had ended
		p.drawn = time.Time{}
	}
}

// done clears the bar.
func (p *progress) done() {
	if p != nil {
		p.bar.Finish()
		p.bar.Exit()
	}
}
