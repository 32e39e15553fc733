package web

import (
	"encoding/json"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserChips drives the filter chips in headless Chromium: they show
// the query's qualifiers, the place and date editors and a chip's ✕ edit
// the qualifiers in the query line, the URL follows (q and sort), and a
// query of qualifiers alone shows no scores.
func TestBrowserChips(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	e, _, chamonix := datedEnv(t)
	ctx := headless(t, exe, 90*time.Second)
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	// settled waits for the URL's q to be line and the grid to show the
	// answer of /api/search for it.
	settled := func(what, line, sort string) {
		t.Helper()
		v := url.Values{"q": {line}}
		if sort != "" {
			v.Set("sort", sort)
		}
		n := len(e.search(t, "/api/search?"+v.Encode()).Results)
		expr := `new URLSearchParams(location.search).get('q') === ` + jsString(line) +
			` && (new URLSearchParams(location.search).get('sort') || '') === ` + jsString(sort) +
			` && document.getElementById('grid').getAttribute('aria-busy') === 'false' && document.querySelectorAll('#grid .cell').length === ` + strconv.Itoa(n)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Fatalf("%s: want ?q=%q sort=%q and %d results; the page has %s, %s cells: %v", what, line, sort, n,
				eval(`location.search`), eval(`String(document.querySelectorAll('#grid .cell').length)`), err)
		}
	}

	do("open", chromedp.Navigate(e.ts.URL+"/?q="+url.QueryEscape("a photo year:2019")), chromedp.WaitVisible(chromedp.ID("q")))
	settled("shared URL", "a photo year:2019", "")
	if c := eval(`[...document.querySelectorAll('#active .qual')].map(c => c.firstChild.textContent).join(',')`); c != "year:2019" {
		t.Errorf("chips %q, want year:2019", c)
	}

	do("place", chromedp.Click(chromedp.CSS("#place-chip summary")), chromedp.SendKeys(chromedp.ID("place"), "chamonix"),
		chromedp.Click(chromedp.ID("place-apply")))
	settled("place chip", "a photo year:2019 place:chamonix", "")

	do("date", chromedp.Click(chromedp.CSS("#date-chip summary")), chromedp.SetValue(chromedp.ID("from"), "2019-01-02"),
		chromedp.SetValue(chromedp.ID("to"), "2019-01-03"), chromedp.Click(chromedp.ID("date-apply")))
	settled("date chip", "a photo year:2019 place:chamonix after:2019-01-02 before:2019-01-04", "")
	if f, to := eval(`document.getElementById('from').value`), eval(`document.getElementById('to').value`); f != "2019-01-02" || to != "2019-01-03" {
		t.Errorf("date editor shows %s to %s after the edit, want 2019-01-02 to 2019-01-03", f, to)
	}

	do("remove year", chromedp.Click(chromedp.CSS(`#active .qual button[aria-label="Remove year:2019"]`)))
	settled("✕ on year:2019", "a photo place:chamonix after:2019-01-02 before:2019-01-04", "")

	do("sort", chromedp.SetValue(chromedp.ID("sort"), "-date"), chromedp.Evaluate[chromedp.Void](`document.getElementById('sort').dispatchEvent(new Event('change'))`))
	settled("sort by date", "a photo place:chamonix after:2019-01-02 before:2019-01-04", "-date")

	do("listing", chromedp.Navigate(e.ts.URL+"/?q=place%3Achamonix"))
	settled("qualifiers alone", "place:chamonix", "")
	if n := eval(`String(document.querySelectorAll('#grid .cell').length)`); n != strconv.Itoa(len(chamonix)) {
		t.Errorf("place:chamonix shows %s photos, want %d", n, len(chamonix))
	}
	if l := eval(`document.querySelector('#grid .cell .label').textContent`); l == "" || l[0] >= '0' && l[0] <= '9' || l[0] == '-' {
		t.Errorf("a listing's label %q shows a score", l)
	}

	// Similar images keep the query's qualifiers (and drop its words): the
	// chips filter the search by image, the URL holds both, and a chip's ✕
	// widens it again.
	similarSettled := func(what, id, quals string) {
		t.Helper()
		v := url.Values{"id": {id}, "k": {"50"}}
		if quals != "" {
			v.Set("q", quals)
		}
		n := len(e.search(t, "/api/similar?"+v.Encode()).Results)
		expr := `new URLSearchParams(location.search).get('similar') === ` + jsString(id) +
			` && (new URLSearchParams(location.search).get('q') || '') === ` + jsString(quals) +
			` && document.getElementById('q').value === ` + jsString(quals) +
			` && document.getElementById('grid').getAttribute('aria-busy') === 'false' && document.querySelectorAll('#grid .cell').length === ` + strconv.Itoa(n)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Fatalf("%s: want ?similar=%s q=%q and %d results; the page has %s, %s cells: %v", what, id, quals, n,
				eval(`location.search`), eval(`String(document.querySelectorAll('#grid .cell').length)`), err)
		}
	}
	do("words and a place", chromedp.Navigate(e.ts.URL+"/?q="+url.QueryEscape("a photo place:chamonix")))
	settled("words and a place", "a photo place:chamonix", "")
	first := e.search(t, "/api/search?k=50&q="+url.QueryEscape("a photo place:chamonix")).Results[0]
	do("open the first", chromedp.Click(chromedp.CSS("#grid .cell")))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('viewer').open`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("viewer: %v", err)
	}
	do("similar", chromedp.Click(chromedp.ID("similar")))
	similarSettled("similar images with the place kept", first.ID, "place:chamonix")
	if n := eval(`String(document.querySelectorAll('#grid .cell').length)`); n != strconv.Itoa(len(chamonix)) {
		t.Errorf("similar images in Chamonix: %s, want the %d Chamonix photos", n, len(chamonix))
	}
	do("remove place", chromedp.Click(chromedp.CSS(`#active .qual button[aria-label="Remove place:chamonix"]`)))
	similarSettled("✕ on place:chamonix", first.ID, "")
	do("reload", chromedp.Navigate(e.ts.URL+"/?similar="+first.ID+"&q="+url.QueryEscape("year:2019 place:chamonix")))
	similarSettled("a shared similar-images URL", first.ID, "year:2019 place:chamonix")

	// A key:value in a phrase in quotes is text, as the server reads it:
	// no chip for it, and a chip's ✕ leaves the phrase whole. (Once the
	// page showed a place:chamonix" chip that filtered nothing, and its ✕
	// cut the phrase open.)
	phrase := `"a photo of place:chamonix" year:2019`
	do("a phrase in quotes", chromedp.Navigate(e.ts.URL+"/?q="+url.QueryEscape(phrase)), chromedp.WaitVisible(chromedp.ID("q")))
	settled("a phrase in quotes", phrase, "")
	if c := eval(`[...document.querySelectorAll('#active .qual')].map(c => c.firstChild.textContent).join(',')`); c != "year:2019" {
		t.Errorf("chips of %s: %q, want year:2019", phrase, c)
	}
	do("remove year beside a phrase", chromedp.Click(chromedp.CSS(`#active .qual button[aria-label="Remove year:2019"]`)))
	settled("✕ on year:2019 beside a phrase", `"a photo of place:chamonix"`, "")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
