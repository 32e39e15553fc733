package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// TestSplitQueryQualifiers: a qualifier's quoted value stays one word,
// even when it holds a word that starts with - or +.
func TestSplitQueryQualifiers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`snow camera:"a -b" -people`, []string{`snow camera:"a -b"`, "-people"}},
		{`year:2019 place:"new york"`, []string{`year:2019 place:"new york"`}},
		{`camera:"open -x`, []string{`camera:"open -x`}},
	} {
		if got := SplitQuery(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitQuery(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// metaByPath is metadata held in memory, as the index serves it.
type metaByPath map[string]store.Meta

func (m metaByPath) EachMeta(fn func(string, store.Meta) error) error {
	ps := make([]string, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		if err := fn(p, m[p]); err != nil {
			return err
		}
	}
	return nil
}

func (m metaByPath) Meta(p string) (store.Meta, bool, error) { x, ok := m[p]; return x, ok, nil }

// datedEnv is a server whose photos have metadata: photo i (in name
// order) taken on 2019-01-(i+1) at noon, in Chamonix for even i (listed in
// chamonix, in date order) and Lyon for odd i.
func datedEnv(t *testing.T) (*env, func(*store.Snapshot) search.Metadata, []string) {
	md := metaByPath{}
	source := func(*store.Snapshot) search.Metadata { return md }
	e := newEnv(t, func(o *Options) { o.Meta = source })
	es, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var chamonix []string
	for i, x := range es {
		p := filepath.Join(e.dir, x.Name())
		m := store.Meta{Taken: time.Date(2019, 1, 1+i, 12, 0, 0, 0, time.UTC).Unix(), TakenSource: store.TakenEXIF, City: "Lyon", Country: "France"}
		if i%2 == 0 {
			m.City = "Chamonix-Mont-Blanc"
			chamonix = append(chamonix, p)
		}
		md[p] = m
	}
	return e, source, chamonix
}

// TestSearchQualifiers: qualifiers in q filter /api/search as they filter
// `clipidx search`; qualifiers alone list by date (listing, no score);
// sort orders; a bad qualifier or sort is a 400 naming it.
func TestSearchQualifiers(t *testing.T) {
	e, source, chamonix := datedEnv(t)
	paths := func(a Answer) []string {
		var ps []string
		for _, r := range a.Results {
			ps = append(ps, r.Path)
		}
		return ps
	}
	q := func(line string, extra ...string) string {
		v := url.Values{"q": {line}, "k": {"100"}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return "/api/search?" + v.Encode()
	}

	a := e.search(t, q("place:chamonix", "sort", "date"))
	if !a.Listing || !slices.Equal(paths(a), chamonix) {
		t.Errorf("place:chamonix by date: listing %v, %v; want %v", a.Listing, paths(a), chamonix)
	}
	newest := slices.Clone(chamonix)
	slices.Reverse(newest)
	if a := e.search(t, q("place:chamonix year:2019")); !slices.Equal(paths(a), newest) {
		t.Errorf("place:chamonix year:2019: %v, want newest first %v", paths(a), newest)
	}
	if a := e.search(t, q("year:2020")); len(a.Results) != 0 {
		t.Errorf("year:2020: %v, want nothing", paths(a))
	}

	// With words: the CLI's search, filtered, best first.
	line := "a photo place:chamonix"
	a = e.search(t, q(line))
	req, err := search.ParseRequest(SplitQuery(line))
	if err != nil {
		t.Fatal(err)
	}
	want, err := search.Query(context.Background(), viewOf(e.db), req.Terms, func() (search.Encoder, error) { return tiny(t), nil },
		search.Options{K: 100, Filter: req.Filter, Meta: source})
	if err != nil {
		t.Fatal(err)
	}
	if a.Listing || len(a.Results) != len(chamonix) || len(want) != len(a.Results) {
		t.Fatalf("%q: listing %v, %d results, want %d", line, a.Listing, len(a.Results), len(chamonix))
	}
	for i, r := range a.Results {
		if r.Path != want[i].Path || r.Score != want[i].Score {
			t.Errorf("%q: result %d %s %v, want %s %v", line, i, r.Path, r.Score, want[i].Path, want[i].Score)
		}
	}
	if a := e.search(t, q(line, "sort", "-date")); !slices.Equal(paths(a), newest) {
		t.Errorf("%q by -date: %v, want %v", line, paths(a), newest)
	}

	// In double quotes a qualifier is text, as `clipidx search '"place:chamonix"'`
	// reads it: a search of every photo, ranked, not a listing of Chamonix.
	for _, line := range []string{`"place:chamonix"`, `a "photo place:chamonix"`} {
		a := e.search(t, q(line))
		if a.Listing || len(a.Results) <= len(chamonix) {
			t.Errorf("%q: listing %v, %d results; want a text search of all %d photos", line, a.Listing, len(a.Results), 2*len(chamonix)-1)
		}
	}
	if code, body, _ := e.get(t, q(`snow "b:c"`)); code != 200 {
		t.Errorf(`snow "b:c": %d %s, want 200 (text in quotes)`, code, body)
	}

	for _, tc := range []struct{ path, want string }{
		{q("a photo year:19"), `year:19`},
		{q("yaer:2019"), `no qualifier yaer:`},
		{q("a photo", "sort", "size"), `not \"size\"`},
		{q("year:2019", "sort", "score"), "sort=score"},
	} {
		code, body, _ := e.get(t, tc.path)
		if code != 400 || !contains(body, tc.want) {
			t.Errorf("GET %s: %d %s; want 400 naming %s", tc.path, code, body, tc.want)
		}
	}
}

// TestImageSearchQualifiers: qualifiers in q filter a search by image as
// they filter a text search: /api/similar and /api/search/image keep only
// the matching records, equal to search.Search with the filter, sorted
// when asked; words in q are a 400.
func TestImageSearchQualifiers(t *testing.T) {
	e, source, chamonix := datedEnv(t)
	id := e.idOf(t, chamonix[0])
	f, err := search.ParseRequest([]string{"place:chamonix"})
	if err != nil {
		t.Fatal(err)
	}
	var want []search.Result
	err = viewOf(e.db)(func(s *store.Snapshot) error {
		fr, _, err := s.File(chamonix[0])
		if err != nil {
			return err
		}
		want, err = search.Search(s, s.Vector(fr.Vec), search.Options{K: 50, Filter: f.Filter, Meta: source})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(chamonix) {
		t.Fatalf("reference: %d results, want the %d Chamonix photos", len(want), len(chamonix))
	}
	a := e.search(t, "/api/similar?k=50&id="+id+"&q="+url.QueryEscape("place:chamonix"))
	if len(a.Results) != len(want) {
		t.Fatalf("similar with place:chamonix: %d results, want %d", len(a.Results), len(want))
	}
	for i, r := range a.Results {
		if r.Path != want[i].Path || r.Score != want[i].Score {
			t.Errorf("similar with place:chamonix: result %d %s %v, want %s %v", i, r.Path, r.Score, want[i].Path, want[i].Score)
		}
	}
	if a.Query != "similar:"+id+" place:chamonix" {
		t.Errorf("answer's query %q, want it to name the qualifier", a.Query)
	}
	newest := slices.Clone(chamonix)
	slices.Reverse(newest)
	a = e.search(t, "/api/similar?k=50&sort=-date&id="+id+"&q="+url.QueryEscape("place:chamonix"))
	var got []string
	for _, r := range a.Results {
		got = append(got, r.Path)
	}
	if !slices.Equal(got, newest) {
		t.Errorf("similar with place:chamonix by -date: %v, want %v", got, newest)
	}

	img, err := os.ReadFile(chamonix[0])
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := e.post(t, "/api/search/image?k=50&q="+url.QueryEscape("place:chamonix year:2019"), img)
	if code != 200 {
		t.Fatalf("image upload with qualifiers: %d %s", code, body)
	}
	var up Answer
	if err := json.Unmarshal(body, &up); err != nil {
		t.Fatal(err)
	}
	if len(up.Results) != len(chamonix) {
		t.Errorf("image upload with place:chamonix year:2019: %d results, want %d", len(up.Results), len(chamonix))
	}
	for _, r := range up.Results {
		if !slices.Contains(chamonix, r.Path) {
			t.Errorf("image upload with place:chamonix: %s is not in Chamonix", r.Path)
		}
	}

	for _, path := range []string{
		"/api/similar?id=" + id + "&q=" + url.QueryEscape("a dog place:chamonix"),
		"/api/similar?id=" + id + "&q=" + url.QueryEscape("year:19"),
	} {
		if code, body, _ := e.get(t, path); code != 400 {
			t.Errorf("GET %s: %d %s, want 400", path, code, body)
		}
	}
	if code, body, _ := e.post(t, "/api/search/image?q="+url.QueryEscape("snow"), img); code != 400 || !contains(body, "not words") {
		t.Errorf("image upload with words in q: %d %s, want 400", code, body)
	}
}

// post sends body to path and returns the status code and body.
func (e *env) post(t testing.TB, path string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", e.ts.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// TestUnclosedPhrase: a quote left open made the rest of the line one
// phrase of text on the server, while the page showed its qualifiers as
// chips and `clipidx search` applied them. The server now refuses the
// line, naming the quote, as a shell would.
func TestUnclosedPhrase(t *testing.T) {
	e := newEnv(t, nil)
	for _, q := range []string{`"photo year:2019`, `cat "photo`, `year:2019 "`} {
		code, body, _ := e.get(t, "/api/search?q="+url.QueryEscape(q))
		if code != http.StatusBadRequest || !contains(body, "not closed") {
			t.Errorf("q=%s: %d %s, want 400 naming the open quote", q, code, body)
		}
	}
	if code, body, _ := e.get(t, "/api/search?q="+url.QueryEscape(`"photo year:2019" a"b`)); code != http.StatusOK {
		t.Errorf("a closed phrase and a quote inside a word: %d %s, want 200", code, body)
	}
}
