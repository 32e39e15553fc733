package search

import (
	"errors"
	"math"
	"testing"

	"github.com/clipidx/clipidx/store"
)

func TestParseTerm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Term
		err  bool
	}{
		{"beach", Term{Weight: 1, Text: "beach"}, false},
		{"+sunset", Term{Weight: 1, Text: "sunset"}, false},
		{"-people", Term{Weight: -1, Text: "people"}, false},
		{"+2:dog", Term{Weight: 2, Text: "dog"}, false},
		{"-0.5:a red car", Term{Weight: -0.5, Text: "a red car"}, false},
		{"3:30 pm", Term{Weight: 1, Text: "3:30 pm"}, false},
		{"+note: hi", Term{Weight: 1, Text: "note: hi"}, false},
		{"@/x/a.jpg", Term{Weight: 1, Image: "/x/a.jpg"}, false},
		{"-0.25:@b.png", Term{Weight: -0.25, Image: "b.png"}, false},
		{`\-5 degrees`, Term{Weight: 1, Text: "-5 degrees"}, false},
		{"", Term{}, true},
		{"-", Term{}, true},
		{"+2:", Term{}, true},
		{"+nan:dog", Term{}, true},
		{"+NaN:dog", Term{}, true},
		{"+inf:dog", Term{}, true},
		{"-Infinity:dog", Term{}, true},
		{"+1e40:dog", Term{}, true},
		{"+inf", Term{Weight: 1, Text: "inf"}, false},
		{"+1e3:dog", Term{Weight: 1000, Text: "dog"}, false},
	} {
		got, err := ParseTerm(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseTerm(%q) = %+v, %v; want %+v, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

type fakeText map[string][]float32

func (f fakeText) EncodeTexts(texts []string) ([]float32, error) {
	var out []float32
	for _, s := range texts {
		v, ok := f[s]
		if !ok {
			return nil, errors.New("unknown text " + s)
		}
		out = append(out, v...)
	}
	return out, nil
}

type fakeImage map[string][]float32

func (f fakeImage) EncodeImageFile(p string) ([]float32, error) { return f[p], nil }

func TestEmbedCombines(t *testing.T) {
	te := fakeText{"x": {2, 0, 0}, "y": {0, 5, 0}}
	ie := fakeImage{"z.jpg": {0, 0, 3}}
	for _, tc := range []struct {
		args []string
		want []float32
	}{
		{[]string{"x"}, []float32{1, 0, 0}},
		{[]string{"x", "-y"}, []float32{1 / math.Sqrt2, -1 / math.Sqrt2, 0}},
		{[]string{"x", "+3:@z.jpg"}, []float32{1 / float32(math.Sqrt(10)), 0, 3 / float32(math.Sqrt(10))}},
	} {
		terms, err := ParseQuery(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Embed(terms, 3, te, ie)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("%v: got %v want %v", tc.args, got, tc.want)
				break
			}
		}
	}
	terms, _ := ParseQuery([]string{"x", "-x"})
	if _, err := Embed(terms, 3, te, ie); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("cancelling terms: %v, want ErrEmptyQuery", err)
	}
	if HasImage([]Term{{Text: "a"}}) || !HasText([]Term{{Text: "a"}}) {
		t.Error("HasImage/HasText wrong")
	}
}

// TestEmbedLargeWeights: weights that are finite float32s but whose
// weighted sum is not (3e38 + 3e38) still give the unit direction.
func TestEmbedLargeWeights(t *testing.T) {
	te := fakeText{"x": {2, 0, 0}, "y": {0, 1, 0}}
	for _, tc := range []struct {
		terms []Term
		want  []float32
	}{
		{[]Term{{Weight: 3e38, Text: "x"}, {Weight: 3e38, Text: "x"}}, []float32{1, 0, 0}},
		{[]Term{{Weight: 3e38, Text: "x"}, {Weight: -3e38, Text: "y"}, {Weight: 3e38, Text: "x"}},
			[]float32{2 / float32(math.Sqrt(5)), -1 / float32(math.Sqrt(5)), 0}},
	} {
		got, err := Embed(tc.terms, 3, te, nil)
		if err != nil {
			t.Errorf("%v: %v", tc.terms, err)
			continue
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("%v: got %v want %v", tc.terms, got, tc.want)
				break
			}
		}
	}
}

// TestEmbedRejectsBadVectors: a term embedding with a NaN, an infinity or
// no direction is a bad query (store.Normalize's check, one for the tree).
func TestEmbedRejectsBadVectors(t *testing.T) {
	inf := float32(math.Inf(1))
	te := fakeText{"nan": {float32(math.NaN()), 1, 0}, "inf": {0, inf, 0}, "zero": {0, 0, 0}}
	for _, text := range []string{"nan", "inf", "zero"} {
		_, err := Embed([]Term{{Weight: 1, Text: text}}, 3, te, nil)
		if !errors.Is(err, ErrBadQuery) || !errors.Is(err, store.ErrBadVector) {
			t.Errorf("%s: %v, want ErrBadQuery wrapping store.ErrBadVector", text, err)
		}
	}
}
