package search

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func day(s string) int64 {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

// TestParseRequestQualifiers: every qualifier, quoting, combinations with
// terms, and what is left as text.
func TestParseRequestQualifiers(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		terms []Term
		want  Filter // written is not compared
	}{
		{[]string{"after:2019-06-01"}, nil, Filter{After: day("2019-06-01"), HasAfter: true}},
		{[]string{"before:2019-09"}, nil, Filter{Before: day("2019-09-01"), HasBefore: true}},
		{[]string{"after:2019"}, nil, Filter{After: day("2019-01-01"), HasAfter: true}},
		{[]string{"year:2019"}, nil, Filter{Years: [][2]int64{{day("2019-01-01"), day("2020-01-01")}}}},
		{[]string{"year:2017..2019"}, nil, Filter{Years: [][2]int64{{day("2017-01-01"), day("2020-01-01")}}}},
		{[]string{"year:2016 year:2019"}, nil, Filter{Years: [][2]int64{{day("2016-01-01"), day("2017-01-01")}, {day("2019-01-01"), day("2020-01-01")}}}},
		{[]string{"after:2020-02-29"}, nil, Filter{After: day("2020-02-29"), HasAfter: true}},
		{[]string{"place:chamonix"}, nil, Filter{Places: [][]string{{"chamonix"}}}},
		{[]string{`place:"New York"`}, nil, Filter{Places: [][]string{{"new", "york"}}}},
		{[]string{"place:Zürich"}, nil, Filter{Places: [][]string{{"zurich"}}}},
		{[]string{"near:45.92,6.87,10km"}, nil, Filter{Near: []Circle{{45.92, 6.87, 10}}}},
		{[]string{"near:-33.86,151.2,500m"}, nil, Filter{Near: []Circle{{-33.86, 151.2, 0.5}}}},
		{[]string{"near:40.7,-74,2mi"}, nil, Filter{Near: []Circle{{40.7, -74, 2 * 1.609344}}}},
		{[]string{`camera:"pentax k-1"`}, nil, Filter{Cameras: [][]string{{"pentax", "k", "1"}}}},
		{[]string{"camera:X100V"}, nil, Filter{Cameras: [][]string{{"x", "100", "v"}}}},
		{[]string{"lens:31mm"}, nil, Filter{Lenses: [][]string{{"31", "mm"}}}},
		{[]string{"lens:f/2.8"}, nil, Filter{Lenses: [][]string{{"f", "2.8"}}}},
		{[]string{`lens:"EF 24-70" lens:50mm`}, nil, Filter{Lenses: [][]string{{"ef", "24", "70"}, {"50", "mm"}}}},
		{[]string{"kind:photo"}, nil, Filter{Kinds: KindPhoto}},
		{[]string{"kind:video"}, nil, Filter{Kinds: KindVideo}},
		{[]string{"kind:photo|video"}, nil, Filter{Kinds: KindPhoto | KindVideo}},
		{[]string{"KIND:Video"}, nil, Filter{Kinds: KindVideo}},
		// Combined with terms, in one argument or several.
		{[]string{"snow year:2019 place:chamonix"}, []Term{{Weight: 1, Text: "snow"}},
			Filter{Years: [][2]int64{{day("2019-01-01"), day("2020-01-01")}}, Places: [][]string{{"chamonix"}}}},
		{[]string{"a beach", "-people kind:photo", "+0.5:sunset"},
			[]Term{{Weight: 1, Text: "a beach"}, {Weight: -1, Text: "people"}, {Weight: 0.5, Text: "sunset"}},
			Filter{Kinds: KindPhoto}},
		{[]string{`the old camera:"pentax k-1" on a table`}, []Term{{Weight: 1, Text: "the old on a table"}},
			Filter{Cameras: [][]string{{"pentax", "k", "1"}}}},
		{[]string{"@/photos/a b:c.jpg", "year:2019"}, []Term{{Weight: 1, Image: "/photos/a b:c.jpg"}},
			Filter{Years: [][2]int64{{day("2019-01-01"), day("2020-01-01")}}}},
		// Not qualifiers: text as before.
		{[]string{"3:30 pm"}, []Term{{Weight: 1, Text: "3:30 pm"}}, Filter{}},
		{[]string{"Note: a sign"}, []Term{{Weight: 1, Text: "Note: a sign"}}, Filter{}},
		{[]string{`\year:2019`}, []Term{{Weight: 1, Text: "year:2019"}}, Filter{}},
		{[]string{`a sign saying \place:here`}, []Term{{Weight: 1, Text: "a sign saying place:here"}}, Filter{}},
		{[]string{"+2:dog"}, []Term{{Weight: 2, Text: "dog"}}, Filter{}},
	} {
		r, err := ParseRequest(tc.args)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		r.Filter.written = nil
		if !reflect.DeepEqual(r.Terms, tc.terms) || !reflect.DeepEqual(r.Filter, tc.want) {
			t.Errorf("%q:\n got %+v %+v\nwant %+v %+v", tc.args, r.Terms, r.Filter, tc.terms, tc.want)
		}
	}
}

// TestParseRequestMalformed: each malformed form is an ErrQualifier error
// naming the qualifier as written and saying what is wrong, never text.
func TestParseRequestMalformed(t *testing.T) {
	for _, tc := range []struct{ arg, why string }{
		{"year:19", "four digits"},
		{"year:twenty", "four digits"},
		{"year:2019..2017", "backwards"},
		{"year:2019..", "four digits"},
		{"year:", "needs a value"},
		{"after:2019-13", "month"},
		{"after:2019-02-30", "day of February 2019"},
		{"after:2019-6-1", "month"},
		{"before:2019/09/01", "not a year"},
		{"after:2019-01-01-01", "not a date"},
		{"after:2019 after:2020", "twice"},
		{"before:2019 before:2020", "twice"},
		{"after:2019-09 before:2019-06", "no date is both"},
		{"after:2019-06 before:2019-06", "no date is both"},
		{"near:45.92,6.87", "LAT,LON,RADIUS"},
		{"near:45.92,6.87,10", "unit"},
		{"near:45.92,6.87,10ft", "does not read: write km, m or mi"}, // "5mi" once said it "needs a unit, km or m"
		{"near:95,6.87,10km", "latitude"},
		{"near:45,200,10km", "longitude"},
		{"near:45,6,-1km", "above 0"},
		{"near:45,6,0km", "above 0"},
		{"near:NaN,6,1km", "latitude"},
		{"near:45,6,infkm", "above 0"},
		{"kind:picture", `"picture" is not a kind`},
		{"kind:photo|", `"" is not a kind`},
		{`camera:"pentax k-1`, "not closed"},
		{`beach camera:"pentax`, "not closed"},
		{`camera:""`, "needs a value"},
		{`camera:"a"b`, "after the closing quote"},
		{"place:---", "no letters"},
		{`lens:""`, "needs a value"},
		{"lens:/", "no letters"},
		{"yaer:2019", "no qualifier yaer:"},
		{"beach Date:2019", "no qualifier date:"},
		{"-year:2019", "cannot be negated"},
		{"+2:place:paris", "cannot be negated or weighted"},
		{"beach -kind:video", "cannot be negated"},
	} {
		_, err := ParseRequest([]string{tc.arg})
		if !errors.Is(err, ErrQualifier) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: got %v, want ErrQualifier saying %q", tc.arg, err, tc.why)
			continue
		}
		// The error names the qualifier as written (a conflict names both).
		first := strings.Fields(tc.arg)[len(strings.Fields(tc.arg))-1]
		if strings.Contains(tc.why, "both") {
			first = strings.Fields(tc.arg)[0]
		}
		if !strings.Contains(err.Error(), strings.Trim(first, `"`)) {
			t.Errorf("%q: error %q does not name %q", tc.arg, err, first)
		}
	}
}

// TestParseQueryRefusesQualifiers: a caller that takes terms only gets an
// error for a qualifier, not a text term.
func TestParseQueryRefusesQualifiers(t *testing.T) {
	if _, err := ParseQuery([]string{"beach year:2019"}); !errors.Is(err, ErrQualifier) {
		t.Errorf("ParseQuery with a qualifier: %v, want ErrQualifier", err)
	}
	if _, err := ParseQuery([]string{"kind:photo|video"}); !errors.Is(err, ErrQualifier) {
		t.Errorf("ParseQuery with kind:photo|video: %v, want ErrQualifier", err)
	}
	terms, err := ParseQuery([]string{"3:30 pm"})
	if err != nil || len(terms) != 1 || terms[0].Text != "3:30 pm" {
		t.Errorf("ParseQuery(3:30 pm) = %v, %v", terms, err)
	}
}

// TestFilterStringRoundTrip: String gives back qualifiers that parse to
// the same filter.
func TestFilterStringRoundTrip(t *testing.T) {
	r, err := ParseRequest([]string{`dog year:2019..2020 place:"Saint-Étienne" near:1,2,3km camera:"pentax k-1" kind:video after:2019-03 before:2020-07-04`})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseRequest([]string{r.Filter.String()})
	if err != nil {
		t.Fatalf("%q: %v", r.Filter.String(), err)
	}
	if !reflect.DeepEqual(again.Filter, r.Filter) || len(again.Terms) != 0 {
		t.Errorf("%q parsed to %+v, want %+v", r.Filter.String(), again, r.Filter)
	}
}

// FuzzParseRequest: no input panics; a parsed filter's String parses back
// to it; no known qualifier is left in a term's text unless escaped; a
// failure is ErrQualifier, ErrEmptyQuery or ErrBadWeight.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"snow year:2019 place:chamonix", `camera:"pentax k-1" kind:photo|video`,
		"near:45.92,6.87,10km", "after:2019-06-01 before:2019-09", `\year:2019`, "-year:2019", "3:30",
		`a "b" c:"d e" f`, "+0.5:@x.jpg", "year:2017..2019", `place:"`, "ÿ:ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRequest([]string{s})
		if err != nil {
			if !errors.Is(err, ErrQualifier) && !errors.Is(err, ErrEmptyQuery) && !errors.Is(err, ErrBadWeight) {
				t.Fatalf("%q: unexpected error %v", s, err)
			}
			return
		}
		again, err := ParseRequest([]string{r.Filter.String()})
		if r.Filter.String() != "" && (err != nil || !reflect.DeepEqual(again.Filter, r.Filter)) {
			t.Fatalf("%q: filter %q parsed back to %+v, %v; want %+v", s, r.Filter.String(), again.Filter, err, r.Filter)
		}
		for _, term := range r.Terms {
			if term.Image != "" {
				continue
			}
			ws, _ := words(term.Text)
			for i, sp := range ws {
				k, _, ok := qualifierShape(term.Text[sp.lo:sp.hi])
				if ok && knownKey(k) && !(i == 0 && strings.HasPrefix(strings.TrimLeft(s, "+-"), `\`)) {
					t.Fatalf("%q: qualifier %q left in the text %q", s, term.Text[sp.lo:sp.hi], term.Text)
				}
			}
		}
	})
}

// TestEscapeQualifiers: every key:value word of a phrase escaped, the
// phrase is one text term, word for word, with no filter; an unknown key
// is text too, where it would be an error.
func TestEscapeQualifiers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"place:paris", `\place:paris`},
		{"snow  year:2019 at 3:30", `snow  \year:2019 at 3:30`},
		{"Note: yaer:2019 camera:x", `Note: \yaer:2019 \camera:x`},
		{"no qualifier here", "no qualifier here"},
		{"", ""},
	} {
		got := EscapeQualifiers(tc.in)
		if got != tc.want {
			t.Errorf("EscapeQualifiers(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.in == "" {
			continue
		}
		r, err := ParseRequest([]string{got})
		if err != nil {
			t.Errorf("ParseRequest(%q): %v", got, err)
			continue
		}
		// White space between words may close up, as in any text term.
		if r.Filter.Qualified() || len(r.Terms) != 1 || strings.Join(strings.Fields(r.Terms[0].Text), " ") != strings.Join(strings.Fields(tc.in), " ") {
			t.Errorf("ParseRequest(%q) = %+v (qualified %v), want the text %q alone", got, r.Terms, r.Filter.Qualified(), tc.in)
		}
	}
}
