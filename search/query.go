package search

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TextEncoder embeds texts (the CLI adapts tokenizer + text tower to it).
// It returns [len(texts), D] float32, normalised or not.
type TextEncoder interface {
	EncodeTexts(texts []string) ([]float32, error)
}

// ImageEncoder embeds image files for similar-image queries; [D] float32.
type ImageEncoder interface {
	EncodeImageFile(path string) ([]float32, error)
}

// ErrEmptyQuery is returned when a query has no terms, or its terms cancel
// out (e.g. "cat" and "-cat").
var ErrEmptyQuery = errors.New("empty query")

// ErrBadWeight is returned when a term's weight is a number but not a
// usable one (NaN, infinite, or beyond float32).
var ErrBadWeight = errors.New("invalid query weight")

// Term is one part of a query. The query vector is the L2-normalised
// weighted sum of the terms' L2-normalised embeddings.
type Term struct {
	Weight float32
	Text   string // a text to embed, or
	Image  string // an image file to embed
}

// ParseTerm reads one query argument:
//
//	beach            text, weight 1
//	+sunset          text, weight 1
//	-people          text, weight −1 (subtract)
//	+2:dog  -0.5:car text with an explicit weight (sign required)
//	@photo.jpg       an image file, weight 1 (also +@, -@, +0.5:@…)
//
// A bare "3:30 pm" is text: a weight needs a leading sign. Use "\-x" or
// "\@x" for a text that starts with one of these characters.
func ParseTerm(arg string) (Term, error) {
	t := Term{Weight: 1}
	s := arg
	switch {
	case strings.HasPrefix(s, `\`):
		t.Text = s[1:]
		return t, checkTerm(t, arg)
	case strings.HasPrefix(s, "+"), strings.HasPrefix(s, "-"):
		sign := float32(1)
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
		t.Weight = sign
		if i := strings.IndexByte(s, ':'); i > 0 {
			w, err := strconv.ParseFloat(s[:i], 32)
			if errors.Is(err, strconv.ErrRange) || err == nil && (math.IsNaN(w) || math.IsInf(w, 0)) {
				return Term{}, fmt.Errorf("%w: %q in term %q (use a finite number such as +2:dog, or \\%s for a text)", ErrBadWeight, s[:i], arg, arg)
			}
			if err == nil {
				t.Weight = sign * float32(w)
				s = s[i+1:]
			}
		}
	}
	if strings.HasPrefix(s, "@") {
		t.Image = s[1:]
	} else {
		t.Text = s
	}
	return t, checkTerm(t, arg)
}

func checkTerm(t Term, arg string) error {
	if strings.TrimSpace(t.Text) == "" && t.Image == "" {
		return fmt.Errorf("%w: term %q has nothing to search for", ErrEmptyQuery, arg)
	}
	return nil
}

// ParseQuery parses every argument with ParseTerm, for a query that takes
// terms only: a qualifier (year:2019) is an ErrQualifier error here, never
// a text; ParseRequest takes both.
func ParseQuery(args []string) ([]Term, error) {
	if len(args) == 0 {
		return nil, ErrEmptyQuery
	}
	r, err := ParseRequest(args)
	if err != nil {
		return nil, err
	}
	if r.Filter.Qualified() {
		return nil, fmt.Errorf("%w: %s filters records, and only search terms are taken here", ErrQualifier, r.Filter.String())
	}
	return r.Terms, nil
}

// HasText and HasImage tell the caller which towers a query needs.
func HasText(terms []Term) bool {
	for _, t := range terms {
		if t.Image == "" {
			return true
		}
	}
	return false
}

// HasImage reports whether any term is an image.
func HasImage(terms []Term) bool {
	for _, t := range terms {
		if t.Image != "" {
			return true
		}
	}
	return false
}

// Embed turns terms into one unit query vector of dimension dim. Texts are
// encoded in one call to te; images one by one with ie. Either encoder may
// be nil when the query has no such term.
func Embed(terms []Term, dim int, te TextEncoder, ie ImageEncoder) ([]float32, error) {
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	var texts []string
	for _, t := range terms {
		if t.Image == "" {
			texts = append(texts, t.Text)
		}
	}
	var tv []float32
	if len(texts) > 0 {
		if te == nil {
			return nil, errors.New("query has text but no text encoder")
		}
		var err error
		if tv, err = te.EncodeTexts(texts); err != nil {
			return nil, fmt.Errorf("encode query text: %w", err)
		}
		if len(tv) != len(texts)*dim {
			return nil, fmt.Errorf("%w: text encoder returned %d values for %d texts of dimension %d", ErrBadQuery, len(tv), len(texts), dim)
		}
	}
	sum := make([]float64, dim)
	ti := 0
	for _, t := range terms {
		var v []float32
		if t.Image == "" {
			v = tv[ti*dim : (ti+1)*dim]
			ti++
		} else {
			if ie == nil {
				return nil, errors.New("query has an image but no image encoder")
			}
			var err error
			if v, err = ie.EncodeImageFile(t.Image); err != nil {
				return nil, fmt.Errorf("query image %s: %w", t.Image, err)
			}
			if len(v) != dim {
				return nil, fmt.Errorf("%w: image %s embedded to %d values, want %d", ErrBadQuery, t.Image, len(v), dim)
			}
		}
		u, err := unit(v)
		if err != nil {
			return nil, fmt.Errorf("term %q: %w", t.Text+t.Image, err)
		}
		for i, x := range u {
			sum[i] += float64(t.Weight) * float64(x)
		}
	}
	// Normalise in float64: with large (finite) weights the sum itself may
	// not fit in a float32, its direction always does.
	var n float64
	for _, x := range sum {
		n += x * x
	}
	if n < 1e-12 {
		return nil, fmt.Errorf("%w: the terms cancel out", ErrEmptyQuery)
	}
	if math.IsInf(n, 0) || math.IsNaN(n) {
		return nil, fmt.Errorf("%w: the weighted sum overflows", ErrBadWeight)
	}
	inv := 1 / math.Sqrt(n)
	out := make([]float32, dim)
	for i, x := range sum {
		out[i] = float32(x * inv)
	}
	return out, nil
}
