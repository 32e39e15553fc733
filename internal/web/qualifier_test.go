package web

import (
	"context"
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
