package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/clipidx/clipidx/search"
)

// chromium finds a Chromium to drive; without one the test is skipped,
// except under CI=true, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH (Debian: apt-get install chromium): the browser test needs it"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// headless starts a headless Chromium (exe) for t, with the options
// every browser test takes and extra ones, and returns a tab's context
// limited to timeout; all of it ends with the test.
func headless(t *testing.T, exe string, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 760)}, extra...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitPlayer polls expr in ctx's page until it is true (30 s at most),
// failing with what and the state of the viewer's player.
func waitPlayer(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const c = document.getElementById('clip'); return JSON.stringify({err: c.error && c.error.message, rs: c.readyState, t: c.currentTime, src: c.src, hidden: c.hidden}) })()`))
		t.Fatalf("%s: %v (player %s)", what, err, state)
	}
}

// wantIDs is what `clipidx search` ranks for a typed line, as server ids.
func (e *env) wantIDs(t *testing.T, line string, k int) []string {
	t.Helper()
	terms, err := search.ParseQuery(SplitQuery(line))
	if err != nil {
		t.Fatal(err)
	}
	res, err := search.Query(context.Background(), viewOf(e.db), terms, func() (search.Encoder, error) { return tiny(t), nil }, search.Options{K: k})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range res {
		ids = append(ids, e.srv.ids.id(x.Path))
	}
	return ids
}

// gridJS lists the thumbnails shown, in order, once every one has loaded.
const gridJS = `(() => {
  if (document.getElementById('grid').getAttribute('aria-busy') !== 'false') return null;
  const imgs = [...document.querySelectorAll('#grid .cell img')];
  if (!imgs.length || !imgs.every(i => i.complete)) return null;
  return imgs.map(i => ({id: i.getAttribute('src').replace('/thumb/', ''), alt: i.alt, w: i.naturalWidth}));
})()`

type shown struct {
	ID  string `json:"id"`
	Alt string `json:"alt"`
	W   int    `json:"w"`
}

// TestBrowser drives the page in headless Chromium: a typed query, the
// grid against clipidx search, the viewer, similar images, the keyboard,
// the back button and a reloaded ?q= URL. Screenshots go to the test's
// temporary folder (and to $CLIPIDX_SHOTS when set).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	e := newEnv(t, nil)
	shots := t.TempDir()
	ctx := headless(t, exe, 90*time.Second, chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))

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
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if d := os.Getenv("CLIPIDX_SHOTS"); d != "" {
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, name), b, 0o644)
		}
	}
	// grid waits until the grid shows len(want) loaded thumbnails and
	// checks them against want (ids, best first).
	grid := func(want []string, what string) {
		t.Helper()
		var got []shown
		same := func() bool {
			if len(got) != len(want) {
				return false
			}
			for i, g := range got {
				if g.ID != want[i] || g.W <= 0 {
					return false
				}
			}
			return true
		}
		// Wait for the grid to settle on the wanted thumbnails (a search
		// may still be replacing an earlier grid), then report what it
		// shows.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !same(); time.Sleep(100 * time.Millisecond) {
			v, err := chromedp.Run(ctx, chromedp.Evaluate[[]shown](gridJS))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got = v
		}
		if len(got) != len(want) {
			t.Fatalf("%s: the grid shows %d loaded thumbnails, clipidx search gives %d results", what, len(got), len(want))
		}
		for i, g := range got {
			if g.ID != want[i] {
				t.Errorf("%s: thumbnail %d is %s, clipidx search ranks %s there", what, i, g.ID, want[i])
			}
			if g.W <= 0 || g.Alt == "" || strings.Contains(g.Alt, "/") {
				t.Errorf("%s: thumbnail %d: naturalWidth %d, alt %q", what, i, g.W, g.Alt)
			}
		}
	}
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Type a query: / focuses the box.
	text := e.wantIDs(t, "a red bicycle", 50)
	do("open", chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitVisible(chromedp.ID("q")), chromedp.KeyEvent("/"))
	if a := eval(`document.activeElement.id`); a != "q" {
		t.Errorf("after / the focus is on %q, want the search box", a)
	}
	do("type", chromedp.KeyEvent("a red bicycle"), chromedp.KeyEvent(kb.Enter))
	grid(text, "typed query")
	if loc := eval(`location.search`); loc != "?q=a+red+bicycle" {
		t.Errorf("the URL's query is %q", loc)
	}
	if d := eval(`getComputedStyle(document.getElementById('more')).display`); d != "none" {
		t.Errorf("all %d results shown but the More button is displayed (%s)", len(text), d)
	}
	shot("1-results.png")

	// The arrows move to the second result; Enter opens the viewer.
	do("arrows", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowRight))
	if a := eval(`document.activeElement.dataset.index`); a != "1" {
		t.Errorf("after ArrowDown ArrowRight the focus is on result %q, want 1", a)
	}
	do("enter", chromedp.KeyEvent(kb.Enter))
	poll("viewer", `document.getElementById('viewer').open && document.getElementById('full').complete && document.getElementById('full').naturalWidth > 0`)
	want1 := e.search(t, "/api/search?k=2&q=a+red+bicycle").Results[1]
	if p := eval(`document.getElementById('path').textContent`); p != want1.Path {
		t.Errorf("viewer shows %q, want %s", p, want1.Path)
	}
	// The fixture images carry no date: the viewer gives the file's.
	if m, want := eval(`document.getElementById('meta').textContent`), want1.Taken[:10]+" "+want1.Taken[11:16]+" (file date)"; m != want {
		t.Errorf("viewer metadata %q, want %q", m, want)
	}
	shot("2-viewer.png")

	// Similar images, from the stored vector of the opened one.
	sim := e.search(t, "/api/similar?k=50&id="+want1.ID)
	var simIDs []string
	for _, r := range sim.Results {
		simIDs = append(simIDs, r.ID)
	}
	if simIDs[0] != want1.ID {
		t.Errorf("similar to %s starts with %s", want1.ID, simIDs[0])
	}
	do("similar", chromedp.Click(chromedp.ID("similar")))
	grid(simIDs, "similar images")
	if loc := eval(`location.search`); loc != "?similar="+want1.ID {
		t.Errorf("similar images: URL query %q", loc)
	}
	if eval(`String(document.getElementById('viewer').open)`) != "false" {
		t.Errorf("viewer still open after similar images")
	}
	shot("3-similar.png")

	// Escape closes the viewer; the back button returns to the text query.
	do("reopen", chromedp.Focus(chromedp.CSS("#grid .cell")), chromedp.KeyEvent(kb.Enter))
	poll("viewer again", `document.getElementById('viewer').open`)
	do("escape", chromedp.KeyEvent(kb.Escape))
	poll("viewer closed", `!document.getElementById('viewer').open`)
	do("back", chromedp.NavigateBack())
	grid(text, "back to the typed query")

	// Paste an image (an indexed one, fetched by the page): the grid is
	// the answer of POST /api/search/image for the same bytes.
	upload := e.search(t, "/api/similar?k=50&id="+text[2])
	var upIDs []string
	for _, r := range upload.Results {
		upIDs = append(upIDs, r.ID)
	}
	do("paste", chromedp.Evaluate[chromedp.Void](`fetch('/image/`+text[2]+`').then(r => r.blob()).then(b => {
		const dt = new DataTransfer();
		dt.items.add(new File([b], 'pasted', {type: b.type}));
		document.dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt}));
	})`, chromedp.EvalAwaitPromise))
	grid(upIDs, "pasted image")

	// A shared ?q= URL, then reloaded.
	mixed := e.wantIDs(t, "stripes -gray", 50)
	do("shared URL", chromedp.Navigate(e.ts.URL+"/?q=stripes+-gray"))
	grid(mixed, "?q= URL")
	do("reload", chromedp.Reload())
	grid(mixed, "reloaded ?q= URL")
	if q := eval(`document.getElementById('q').value`); q != "stripes -gray" {
		t.Errorf("search box after a reload: %q", q)
	}
	t.Logf("screenshots in %s", shots)
}
