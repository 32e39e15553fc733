package compare

import (
	"fmt"
	"math"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// LogitStats measures zero-shot logits got [nImg, nTxt] against want.
type LogitStats struct {
	Images, Texts int
	// Top1 is each image's best text in got (the first on ties), WantTop1
	// in want; Top1Agree counts the images where they are the same.
	Top1, WantTop1 []int
	Top1Agree      int
	// MaxAbsDiff is the largest |logit − reference logit|, at image
	// WorstImage and text WorstText.
	MaxAbsDiff            float64
	WorstImage, WorstText int
	// MaxProbDiff is the largest difference of the softmax probabilities
	// over each image's texts.
	MaxProbDiff float64
	// NonFinite counts NaN and ±Inf values in got and want.
	NonFinite int
}

// Logits measures got against want, both [nImg, nTxt]. It returns an error
// when a length does not match or nImg or nTxt is out of range.
func Logits(got, want []float32, nImg, nTxt int) (LogitStats, error) {
	if nImg < 0 || nTxt <= 0 {
		return LogitStats{}, fmt.Errorf("compare: logits shape [%d, %d]: want nImg ≥ 0 and nTxt > 0", nImg, nTxt)
	}
	if len(got) != nImg*nTxt || len(want) != nImg*nTxt {
		return LogitStats{}, fmt.Errorf("compare: got %d and want %d logits, shape [%d, %d] needs %d", len(got), len(want), nImg, nTxt, nImg*nTxt)
	}
	s := LogitStats{Images: nImg, Texts: nTxt, Top1: make([]int, nImg), WantTop1: make([]int, nImg), WorstImage: -1, WorstText: -1}
	for i := 0; i < nImg; i++ {
		g, w := got[i*nTxt:(i+1)*nTxt], want[i*nTxt:(i+1)*nTxt]
		s.Top1[i], s.WantTop1[i] = argmax(g), argmax(w)
		if s.Top1[i] == s.WantTop1[i] {
			s.Top1Agree++
		}
		pg, pw := core.Softmax(g), core.Softmax(w)
		for k := range g {
			x, y := float64(g[k]), float64(w[k])
			if !finite(x) || !finite(y) {
				s.NonFinite++
			}
			if d := math.Abs(x - y); !(d <= s.MaxAbsDiff) && !math.IsNaN(s.MaxAbsDiff) {
				s.MaxAbsDiff, s.WorstImage, s.WorstText = d, i, k
			}
			s.MaxProbDiff = nanMax(s.MaxProbDiff, math.Abs(pg[k]-pw[k]))
		}
	}
	return s, nil
}

// CheckTop1 returns a violation unless every image's best text is the
// reference's (no images compared is a violation).
func (s LogitStats) CheckTop1() []string {
	if s.Images == 0 {
		return []string{"no images compared"}
	}
	if s.Top1Agree != s.Images {
		for i := range s.Top1 {
			if s.Top1[i] != s.WantTop1[i] {
				return []string{fmt.Sprintf("top-1 agrees on %d/%d images: image %d picks text %d, the reference %d", s.Top1Agree, s.Images, i, s.Top1[i], s.WantTop1[i])}
			}
		}
	}
	return nil
}

// CheckValues returns a violation when a logit is further than maxDiff
// from its reference or any is NaN or infinite (no images compared is a
// violation).
func (s LogitStats) CheckValues(maxDiff float64) []string {
	if s.Images == 0 {
		return []string{"no images compared"}
	}
	var v []string
	if s.NonFinite > 0 {
		v = append(v, fmt.Sprintf("%d NaN or infinite logits", s.NonFinite))
	}
	if !(s.MaxAbsDiff <= maxDiff) {
		v = append(v, fmt.Sprintf("max |logit diff| %.3g (image %d, text %d) > %g", s.MaxAbsDiff, s.WorstImage, s.WorstText, maxDiff))
	}
	return v
}

// Check is CheckTop1 and CheckValues together.
func (s LogitStats) Check(maxDiff float64) []string {
	if s.Images == 0 {
		return []string{"no images compared"}
	}
	return append(s.CheckTop1(), s.CheckValues(maxDiff)...)
}

// argmax is the index of the largest value, the first on ties (NaN never
// wins).
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] || (math.IsNaN(float64(v[best])) && !math.IsNaN(float64(x))) {
			best = i
		}
	}
	return best
}
