// Package compare is the one comparison engine of the model runtime: it
// measures how far a backend's embeddings and logits are from a reference
// and checks the measures against gates chosen in one place (gates.go) from
// how the model runs. It returns reports and never fails anything itself:
// the conformance suite turns violations into test errors and `clipidx
// check` prints them.
//
// Direction alone is not enough: a cosine gate of 0.99999 accepts an
// embedding scaled by 1.0045, or L2-normalised by mistake. Every gate also
// bounds the relative error ‖got−want‖/‖want‖ of each row and the largest
// |got−want|, at bounds near what each backend really achieves.
//
// Shapes: embeddings are [n, D] row-major float32, logits [nImg, nTxt] (the
// legend is core's).
package compare

import (
	"fmt"
	"math"
)

// Stats measures got [n, D] against want [n, D], row by row. All sums run
// in float64.
type Stats struct {
	Rows, Dim int

	// MinCosine is the smallest row cosine (a zero row has cosine 0,
	// a row with NaN has NaN), at row WorstCosineRow; MeanCosine the mean.
	MinCosine, MeanCosine float64
	WorstCosineRow        int

	// MaxRelErr is the largest row relative error ‖got_i − want_i‖ /
	// ‖want_i‖ (0 when both rows are zero, +Inf when only want_i is), at
	// row WorstRelErrRow; RelErr is ‖got − want‖ / ‖want‖ over the whole
	// matrix.
	MaxRelErr      float64
	WorstRelErrRow int
	RelErr         float64

	// MaxAbsDiff is the largest |got − want|; MaxAbsWant the largest
	// |want|, the scale it is gated against (see Gate.MaxDiff).
	MaxAbsDiff, MaxAbsWant float64

	// NonFiniteGot and NonFiniteWant count NaN and ±Inf values.
	NonFiniteGot, NonFiniteWant int
}

// Embeddings measures got against want, both [n, dim]. It returns an
// error when a length does not match n·dim or n or dim is out of range;
// non-finite values are counted, not errors (Check fails them).
func Embeddings(got, want []float32, n, dim int) (Stats, error) {
	if n < 0 || dim <= 0 {
		return Stats{}, fmt.Errorf("compare: shape [%d, %d]: want n ≥ 0 and dim > 0", n, dim)
	}
	if len(got) != n*dim || len(want) != n*dim {
		return Stats{}, fmt.Errorf("compare: got %d and want %d values, shape [%d, %d] needs %d", len(got), len(want), n, dim, n*dim)
	}
	s := Stats{Rows: n, Dim: dim, MinCosine: math.Inf(1), WorstCosineRow: -1, WorstRelErrRow: -1}
	if n == 0 {
		s.MinCosine = 0
		return s, nil
	}
	var diff2, want2 float64
	for i := 0; i < n; i++ {
		var dot, gg, ww, dd float64
		for k := i * dim; k < (i+1)*dim; k++ {
			x, y := float64(got[k]), float64(want[k])
			if !finite(x) {
				s.NonFiniteGot++
			}
			if !finite(y) {
				s.NonFiniteWant++
			}
			d := x - y
			dot += x * y
			gg += x * x
			ww += y * y
			dd += d * d
			s.MaxAbsDiff = nanMax(s.MaxAbsDiff, math.Abs(d))
			s.MaxAbsWant = nanMax(s.MaxAbsWant, math.Abs(y))
		}
		c := cosine(dot, gg, ww)
		s.MeanCosine += c / float64(n)
		if !(c >= s.MinCosine) && !math.IsNaN(s.MinCosine) {
			s.MinCosine, s.WorstCosineRow = c, i
		}
		r := relErr(dd, ww)
		if !(r <= s.MaxRelErr) && !math.IsNaN(s.MaxRelErr) {
			s.MaxRelErr, s.WorstRelErrRow = r, i
		}
		diff2 += dd
		want2 += ww
	}
	s.RelErr = relErr(diff2, want2)
	return s, nil
}

// Cosine is the cosine similarity of two vectors of the same length, in
// float64: 0 when either is zero, NaN when either holds NaN. Lengths that
// differ are a programming error: it panics.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("compare.Cosine: lengths %d and %d", len(a), len(b)))
	}
	var dot, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		aa += x * x
		bb += y * y
	}
	return cosine(dot, aa, bb)
}

func cosine(dot, aa, bb float64) float64 {
	if aa == 0 || bb == 0 {
		return 0
	}
	return dot / math.Sqrt(aa*bb)
}

// relErr is √dd / √ww: 0 when both are 0, +Inf when only ww is.
func relErr(dd, ww float64) float64 {
	switch {
	case dd == 0:
		return 0
	case ww == 0:
		return math.Inf(1)
	}
	return math.Sqrt(dd / ww)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// nanMax is max(m, x) that keeps a NaN once seen.
func nanMax(m, x float64) float64 {
	if math.IsNaN(m) || math.IsNaN(x) {
		return math.NaN()
	}
	return math.Max(m, x)
}

// Gate bounds one comparison of embeddings. A zero field is a bound of
// zero, not "unchecked": every Gate comes from gates.go.
type Gate struct {
	// MinCosine is the smallest cosine a row may have.
	MinCosine float64
	// MaxRelErr is the largest relative error ‖got_i − want_i‖ / ‖want_i‖
	// a row may have: it sees a scale error, which the cosine cannot.
	MaxRelErr float64
	// MaxDiff is the largest |got − want| as a fraction of the largest
	// |want| (so one bound fits models whose embeddings differ in scale);
	// it sees one wrong value that the row norms dilute.
	MaxDiff float64
}

// Check returns the gate's violations, one sentence each; none means the
// comparison passed. No rows compared, and any NaN or ±Inf, is a violation.
func (s Stats) Check(g Gate) []string {
	var v []string
	if s.Rows == 0 {
		return []string{"no rows compared"}
	}
	if s.NonFiniteGot > 0 {
		v = append(v, fmt.Sprintf("%d NaN or infinite values", s.NonFiniteGot))
	}
	if s.NonFiniteWant > 0 {
		v = append(v, fmt.Sprintf("the reference has %d NaN or infinite values", s.NonFiniteWant))
	}
	if !(s.MinCosine >= g.MinCosine) {
		v = append(v, fmt.Sprintf("cosine %.7f (row %d) < %g", s.MinCosine, s.WorstCosineRow, g.MinCosine))
	}
	if !(s.MaxRelErr <= g.MaxRelErr) {
		v = append(v, fmt.Sprintf("relative error %.3g (row %d) > %g", s.MaxRelErr, s.WorstRelErrRow, g.MaxRelErr))
	}
	if d := s.DiffRatio(); !(d <= g.MaxDiff) {
		v = append(v, fmt.Sprintf("max |diff| %.3g is %.3g of the largest reference value %.3g, > %g", s.MaxAbsDiff, d, s.MaxAbsWant, g.MaxDiff))
	}
	return v
}

// DiffRatio is MaxAbsDiff / MaxAbsWant, the measure Gate.MaxDiff bounds (0
// when both are 0, +Inf when only the reference is all zero).
func (s Stats) DiffRatio() float64 {
	if s.MaxAbsDiff == 0 {
		return 0
	}
	if s.MaxAbsWant == 0 {
		return math.Inf(1)
	}
	return s.MaxAbsDiff / s.MaxAbsWant
}

// String is a one-line summary for logs.
func (s Stats) String() string {
	return fmt.Sprintf("cosine min %.7f mean %.7f, rel err max %.3g (whole %.3g), max |diff| %.3g (%.3g of max |ref|) over %d rows",
		s.MinCosine, s.MeanCosine, s.MaxRelErr, s.RelErr, s.MaxAbsDiff, s.DiffRatio(), s.Rows)
}

// ValueStats measures two tensors that must be equal value for value (the
// preprocessing's pixels against the reference's).
type ValueStats struct {
	// Values is how many were compared, Differ how many are not equal
	// (a NaN is never equal).
	Values, Differ int
	// MaxAbsDiff is the largest |got − want|, subtracted in float32 as
	// the tensors hold them.
	MaxAbsDiff float64
}

// Values compares got with want value for value; lengths that differ are
// an error.
func Values(got, want []float32) (ValueStats, error) {
	if len(got) != len(want) {
		return ValueStats{}, fmt.Errorf("compare: got %d values, want %d", len(got), len(want))
	}
	s := ValueStats{Values: len(got)}
	for i, x := range got {
		if x != want[i] {
			s.Differ++
			s.MaxAbsDiff = nanMax(s.MaxAbsDiff, math.Abs(float64(x-want[i])))
		}
	}
	return s, nil
}
