package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// drawnCount is the count in a frame of the bar: "(12/-)" or "(12/40)".
var drawnCount = regexp.MustCompile(`\((\d+)/(?:\d+|-)\)`)

// framesOf are the frames drawn in out (each starts with a carriage
// return) that show the phase desc.
func framesOf(out, desc string) []string {
	var frames []string
	for _, f := range strings.Split(out, "\r") {
		if strings.Contains(f, desc) {
			frames = append(frames, f)
		}
	}
	return frames
}

// TestProgressGrowingTotal drives the bar as a build over tar shards does:
// each sample read adds one to the total as it is handled, so Done equals
// Total at every event. The bar was restarted by each new total (and, at
// its end at once, cleared): nothing was drawn, no rate, no ETA. It must
// draw a count that grows and a rate, and, as the total is not known, no
// ETA; a following phase with a fixed total shows its ETA.
func TestProgressGrowingTotal(t *testing.T) {
	w := &lockedBuffer{} // a terminal; the spinner draws from its own goroutine
	p := startProgress(w, 0, "scanning", "files", -1)
	clock := time.Now()
	p.now = func() time.Time { return clock }
	p.since = clock
	for i := 1; i <= 3; i++ {
		p.set(i)
	}
	const samples = 20
	for i := 1; i <= samples; i++ {
		clock = clock.Add(250 * time.Millisecond)
		p.describe("indexing")
		p.setTotal(i)
		p.set(i)
	}
	indexing := w.String()
	const todo = 12
	for i := 1; i < todo; i++ {
		clock = clock.Add(250 * time.Millisecond)
		p.describe("reading dates")
		p.setTotal(todo)
		p.set(i)
	}
	p.done()
	meta := strings.TrimPrefix(w.String(), indexing)

	frames := framesOf(indexing, "indexing")
	counts := map[int]bool{}
	last, rate := 0, false
	for _, f := range frames {
		if m := drawnCount.FindStringSubmatch(f); m != nil {
			n, _ := strconv.Atoi(m[1])
			counts[n] = true
			last = n
		}
		rate = rate || strings.Contains(f, " files/s")
		if strings.Contains(f, "ETA") {
			t.Errorf("a total still being counted shows an ETA: %q", f)
		}
	}
	if len(counts) < samples/2 || last != samples {
		t.Errorf("indexing drew counts %v, the last %d: want most of 1..%d, ending at %d\n%q", counts, last, samples, samples, indexing)
	}
	if !rate {
		t.Errorf("indexing drew no rate in files/s:\n%q", indexing)
	}
	eta := false
	for _, f := range framesOf(meta, "reading dates") {
		eta = eta || strings.Contains(f, "files/s, ETA ")
	}
	if !eta {
		t.Errorf("a phase with a known total drew no ETA:\n%q", meta)
	}
}
