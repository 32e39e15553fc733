package search

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrQualifier is returned when a qualifier (key:value) in a query is
// malformed or unknown; the message names it and the form it takes.
var ErrQualifier = errors.New("bad qualifier")

// Qualifiers lists the keys a query takes, in the order help shows them.
var Qualifiers = []string{"after", "before", "year", "place", "near", "camera", "lens", "kind"}

// Request is a parsed query: the terms that rank and the filter that keeps.
// A request with a filter and no terms lists the matching records by date.
type Request struct {
	Terms  []Term
	Filter Filter
}

// ParseRequest reads query arguments as the CLI and the page take them:
// each argument is a term (ParseTerm) whose words may hold qualifiers,
// which are taken out of it and make the filter:
//
//	after:2019-06-01  before:2019-09  year:2019  year:2017..2019
//	place:chamonix  place:"new york"  near:45.92,6.87,10km
//	camera:"pentax k-1"  lens:31mm  kind:photo  kind:video  kind:motion  kind:live
//
// A word "key:value" whose key is letters is a qualifier: a known key
// with a value it cannot read, an unknown key, a negated or weighted
// qualifier (-year:2019) and a quote left open are ErrQualifier errors,
// never text. "\key:value" is the text "key:value". An argument that is an
// image term (@file) is a path and is never read for qualifiers.
func ParseRequest(args []string) (Request, error) {
	var r Request
	for _, a := range args {
		text, quals, err := splitQualifiers(a)
		if err != nil {
			return Request{}, err
		}
		for _, q := range quals {
			if err := r.Filter.add(q); err != nil {
				return Request{}, err
			}
		}
		if len(quals) > 0 && strings.TrimSpace(text) == "" {
			continue
		}
		t, err := ParseTerm(text)
		if err != nil {
			return Request{}, err
		}
		r.Terms = append(r.Terms, t)
	}
	if err := r.Filter.check(); err != nil {
		return Request{}, err
	}
	if len(r.Terms) == 0 && !r.Filter.Qualified() {
		return Request{}, ErrEmptyQuery
	}
	return r, nil
}

// qualifier is one key:value word as written.
type qualifier struct {
	key, value string
	word       string // as written, for errors
}

// span is a word of an argument: arg[lo:hi].
type span struct{ lo, hi int }

// words splits s at white space; a word holding `:"` runs to the closing
// quote (a quoted qualifier value may hold spaces). open reports a quote
// left open.
func words(s string) (ws []span, open bool) {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		j := i
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r) {
				break
			}
			if r == '"' && j > i && s[j-1] == ':' {
				k := strings.IndexByte(s[j+1:], '"')
				if k < 0 {
					return append(ws, span{i, len(s)}), true
				}
				j += k + 2
				continue
			}
			j += n
		}
		ws = append(ws, span{i, j})
		i = j
	}
	return ws, false
}

// qualifierShape splits w as key:value when the key is ASCII letters and
// the value is not empty ("Note:" and "3:30" are not qualifiers).
// A known key with an empty value ("year:") is one, to be refused.
func qualifierShape(w string) (key, value string, ok bool) {
	i := strings.IndexByte(w, ':')
	if i <= 0 {
		return "", "", false
	}
	for _, c := range w[:i] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return "", "", false
		}
	}
	key, value = strings.ToLower(w[:i]), w[i+1:]
	return key, value, value != "" || knownKey(key)
}

// quoteWord quotes a word for an error message, readably when it holds
// double quotes.
func quoteWord(w string) string {
	if strings.Contains(w, `"`) && !strings.Contains(w, "'") {
		return "'" + w + "'"
	}
	return strconv.Quote(w)
}

func knownKey(k string) bool {
	for _, q := range Qualifiers {
		if q == k {
			return true
		}
	}
	return false
}

// splitQualifiers takes the qualifiers out of one argument and returns
// the rest of it (the argument unchanged when it holds none).
func splitQualifiers(arg string) (string, []qualifier, error) {
	if t, err := ParseTerm(arg); err == nil && t.Image != "" {
		return arg, nil, nil
	}
	ws, open := words(arg)
	var quals []qualifier
	var keep []string
	changed := false
	for i, sp := range ws {
		w := arg[sp.lo:sp.hi]
		if open && i == len(ws)-1 {
			if k, _, ok := qualifierShape(w); ok && knownKey(k) {
				return "", nil, fmt.Errorf("%w %s: the quote after %s: is not closed", ErrQualifier, quoteWord(w), k)
			}
		}
		bare := w
		escaped := strings.HasPrefix(w, `\`)
		if escaped {
			bare = w[1:]
		}
		signed := false
		if !escaped && (strings.HasPrefix(w, "+") || strings.HasPrefix(w, "-")) {
			bare, signed = w[1:], true
			if j := strings.IndexByte(bare, ':'); j > 0 {
				if _, err := strconv.ParseFloat(bare[:j], 32); err == nil {
					bare = bare[j+1:]
				}
			}
		}
		key, value, ok := qualifierShape(bare)
		switch {
		case !ok:
			keep = append(keep, w)
		case escaped:
			// "\year:2019": the text; the argument's first backslash is
			// ParseTerm's to take.
			if i == 0 {
				keep = append(keep, w)
			} else {
				keep = append(keep, bare)
				changed = true
			}
		case !knownKey(key):
			return "", nil, fmt.Errorf("%w %s: no qualifier %s: (qualifiers: %s:; write \\%s for the text)", ErrQualifier, quoteWord(w), key, strings.Join(Qualifiers, ": "), bare)
		case signed:
			return "", nil, fmt.Errorf("%w %s: a qualifier keeps records, it cannot be negated or weighted (remove the %c)", ErrQualifier, quoteWord(w), w[0])
		default:
			quals = append(quals, qualifier{key: key, value: value, word: w})
			changed = true
		}
	}
	if !changed {
		return arg, nil, nil
	}
	return strings.Join(keep, " "), quals, nil
}

// EscapeQualifiers returns s with a backslash before each word that
// ParseRequest would take for a qualifier, so that all of s is text: a
// phrase the web page's search box was given in double quotes. A word
// starting with +, -, @ or \ is never such a word.
func EscapeQualifiers(s string) string {
	ws, _ := words(s)
	var b strings.Builder
	last := 0
	for _, sp := range ws {
		if _, _, ok := qualifierShape(s[sp.lo:sp.hi]); ok {
			b.WriteString(s[last:sp.lo])
			b.WriteByte('\\')
			last = sp.lo
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// unquote strips the quotes of a value written key:"...".
func unquote(q qualifier) (string, error) {
	v := q.value
	if strings.HasPrefix(v, `"`) {
		if len(v) < 2 || !strings.HasSuffix(v, `"`) {
			return "", fmt.Errorf("%w %s: text after the closing quote", ErrQualifier, quoteWord(q.word))
		}
		v = v[1 : len(v)-1]
	}
	if strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%w %s: %s: needs a value, such as %s", ErrQualifier, quoteWord(q.word), q.key, example(q.key))
	}
	return v, nil
}

func example(key string) string {
	return map[string]string{
		"after": "after:2019-06-01", "before": "before:2019-09", "year": "year:2019 or year:2017..2019",
		"place": `place:chamonix or place:"new york"`, "near": "near:45.92,6.87,10km",
		"camera": `camera:"pentax k-1"`, "lens": `lens:31mm or lens:"ef 24-70"`, "kind": "kind:photo, kind:video, kind:motion or kind:live",
	}[key]
}

// add reads one qualifier into f.
func (f *Filter) add(q qualifier) error {
	v, err := unquote(q)
	if err != nil {
		return err
	}
	bad := func(why string) error {
		return fmt.Errorf("%w %s: %s (write %s)", ErrQualifier, quoteWord(q.word), why, example(q.key))
	}
	f.written = append(f.written, q.key+":"+quoteValue(v))
	switch q.key {
	case "after", "before":
		lo, _, err := parseDate(v)
		if err != nil {
			return bad(err.Error())
		}
		if q.key == "after" {
			if f.HasAfter {
				return bad("after: is given twice")
			}
			f.After, f.HasAfter = lo, true
		} else {
			if f.HasBefore {
				return bad("before: is given twice")
			}
			f.Before, f.HasBefore = lo, true
		}
	case "year":
		a, b, found := strings.Cut(v, "..")
		if !found {
			b = a
		}
		ya, err := parseYear(a)
		if err != nil {
			return bad(err.Error())
		}
		yb, err := parseYear(b)
		if err != nil {
			return bad(err.Error())
		}
		if yb < ya {
			return bad(fmt.Sprintf("the range runs backwards (%d after %d)", ya, yb))
		}
		f.Years = append(f.Years, [2]int64{yearStart(ya), yearStart(yb + 1)})
	case "place":
		var parts [][]string
		for _, part := range strings.Split(v, ",") {
			w := foldWords(part)
			if len(w) == 0 {
				return bad("no letters or digits to match in each part between commas")
			}
			parts = append(parts, w)
		}
		if len(parts) == 1 {
			f.Places = append(f.Places, parts[0])
		} else {
			f.PlaceParts = append(f.PlaceParts, parts)
		}
	case "camera":
		w := foldRuns(v)
		if len(w) == 0 {
			return bad("no letters or digits to match")
		}
		f.Cameras = append(f.Cameras, w)
	case "lens":
		w := foldRuns(v)
		if len(w) == 0 {
			return bad("no letters or digits to match")
		}
		f.Lenses = append(f.Lenses, w)
	case "near":
		c, err := parseNear(v)
		if err != nil {
			return bad(err.Error())
		}
		f.Near = append(f.Near, c)
	case "kind":
		for _, k := range strings.Split(strings.ToLower(v), "|") {
			switch k {
			case "photo":
				f.Kinds |= KindPhoto
			case "video":
				f.Kinds |= KindVideo
			case "motion":
				f.Kinds |= KindMotion
			case "live":
				f.Kinds |= KindLive
			default:
				return bad(fmt.Sprintf("%q is not a kind", k))
			}
		}
	}
	return nil
}

// check refuses a filter no record can match by construction.
func (f *Filter) check() error {
	if f.HasAfter && f.HasBefore && f.After >= f.Before {
		return fmt.Errorf("%w: after:%s is not before before:%s, so no date is both", ErrQualifier,
			time.Unix(f.After, 0).UTC().Format(time.DateOnly), time.Unix(f.Before, 0).UTC().Format(time.DateOnly))
	}
	return nil
}

func quoteValue(v string) string {
	if strings.ContainsFunc(v, unicode.IsSpace) {
		return `"` + v + `"`
	}
	return v
}

// parseDate reads YYYY, YYYY-MM or YYYY-MM-DD as the wall-clock seconds
// of its first instant and of the first instant after it.
func parseDate(v string) (lo, hi int64, err error) {
	parts := strings.Split(v, "-")
	if len(parts) > 3 {
		return 0, 0, fmt.Errorf("%q is not a date YYYY, YYYY-MM or YYYY-MM-DD", v)
	}
	y, err := parseYear(parts[0])
	if err != nil {
		return 0, 0, err
	}
	m, d := 1, 1
	num := func(s, what string, max int) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || len(s) != 2 || n < 1 || n > max {
			return 0, fmt.Errorf("%q is not a %s (two digits, 01 to %02d)", s, what, max)
		}
		return n, nil
	}
	if len(parts) > 1 {
		if m, err = num(parts[1], "month", 12); err != nil {
			return 0, 0, err
		}
	}
	if len(parts) > 2 {
		days := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
		if d, err = num(parts[2], "day of "+time.Month(m).String()+" "+strconv.Itoa(y), days); err != nil {
			return 0, 0, err
		}
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	switch len(parts) {
	case 1:
		return t.Unix(), t.AddDate(1, 0, 0).Unix(), nil
	case 2:
		return t.Unix(), t.AddDate(0, 1, 0).Unix(), nil
	}
	return t.Unix(), t.AddDate(0, 0, 1).Unix(), nil
}

func parseYear(s string) (int, error) {
	y, err := strconv.Atoi(s)
	if err != nil || len(s) != 4 || y < 1 {
		return 0, fmt.Errorf("%q is not a year (four digits)", s)
	}
	return y, nil
}

func yearStart(y int) int64 { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Unix() }

// parseNear reads LAT,LON,RADIUS with the radius in km, m or mi.
func parseNear(v string) (Circle, error) {
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		return Circle{}, fmt.Errorf("%q is not LAT,LON,RADIUS", v)
	}
	num := func(s, what string, lim float64) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) || math.Abs(x) > lim {
			return 0, fmt.Errorf("%q is not a %s (-%g to %g degrees)", s, what, lim, lim)
		}
		return x, nil
	}
	lat, err := num(parts[0], "latitude", 90)
	if err != nil {
		return Circle{}, err
	}
	lon, err := num(parts[1], "longitude", 180)
	if err != nil {
		return Circle{}, err
	}
	r := strings.ToLower(strings.TrimSpace(parts[2]))
	unit := 1.0
	switch {
	case strings.HasSuffix(r, "km"):
		r = r[:len(r)-2]
	case strings.HasSuffix(r, "mi"):
		r, unit = r[:len(r)-2], 1.609344 // international mile
	case strings.HasSuffix(r, "m"):
		r, unit = r[:len(r)-1], 0.001
	case r != "" && strings.IndexFunc(r, func(c rune) bool { return c >= 'a' && c <= 'z' }) >= 0:
		return Circle{}, fmt.Errorf("the radius %q has a unit clipidx does not read: write km, m or mi", parts[2])
	default:
		return Circle{}, fmt.Errorf("the radius %q needs a unit: km, m or mi", parts[2])
	}
	km, err := strconv.ParseFloat(r, 64)
	if err != nil || math.IsNaN(km) || math.IsInf(km, 0) || km <= 0 {
		return Circle{}, fmt.Errorf("the radius %q is not a distance above 0", parts[2])
	}
	return Circle{Lat: lat, Lon: lon, Km: km * unit}, nil
}
