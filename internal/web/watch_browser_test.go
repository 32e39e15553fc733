package web

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/store"
)

// TestBrowserShowsBuild: the page shows a running build ("indexing 37 of
// 500 new photos"), from the progress another writer records, and runs
// the query shown again when new results land, without a reload.
func TestBrowserShowsBuild(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	e := newEnv(t, nil)
	ctx := headless(t, exe, 120*time.Second)
	count := `document.querySelectorAll('#grid .cell').length`
	waitFor := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	n := len(e.wantIDs(t, "a red bicycle", 50))
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("q")),
		chromedp.Click("#q"), chromedp.KeyEvent("a red bicycle"), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitFor("results", count+" === "+strconv.Itoa(n))

	// Another process's build, at a known point.
	var id store.Identity
	r, err := store.OpenReader(e.db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.View(func(s *store.Snapshot) error { id = s.Identity(); return nil })
	r.Close()
	w, err := store.OpenWriter(e.db, id, store.WriterOptions{Command: "clipidx watch"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteProgress(store.Progress{Phase: "index", Found: 500, Total: 500, Done: 37}); err != nil {
		t.Fatal(err)
	}
	waitFor("building line", `document.getElementById('building').textContent === 'indexing 37 of 500 new photos' && !document.getElementById('building').hidden`)
	w.Close()

	// New photos land: the query runs again by itself.
	copyFile(t, filepath.Join(e.dir, "checker_320x240.png"), filepath.Join(e.dir, "checker copy.png"))
	build(t, e.db, index.Options{}, e.dir)
	waitFor("new results without a reload", count+" === "+strconv.Itoa(n+1))
	waitFor("building line gone", `document.getElementById('building').hidden`)
}
