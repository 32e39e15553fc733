package web

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// TestAnswerPhotoMeta: results carry the date, place, GPS and camera the
// index holds for their files.
func TestAnswerPhotoMeta(t *testing.T) {
	e := newEnv(t, nil)
	p := filepath.Join(e.dir, "wide_300x200.png")
	w, err := store.OpenWriter(e.db, tiny(t).Identity(true), store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	b.PutMeta(p, store.Meta{Taken: 1563120312, Offset: 600, HasOffset: true, TakenSource: store.TakenEXIF, HasGPS: true, Lat: -33.8908, Lon: 151.2743,
		HasAlt: true, Alt: 12.3456, Width: 300, Height: 200,
		City: "Bondi Beach", Region: "New South Wales", Country: "Australia", CountryCode: "AU", Make: "Apple", Model: "iPhone 8", Lens: "back camera"})
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a := e.search(t, "/api/similar?k=50&id="+e.idOf(t, p))
	if len(a.Results) < 2 {
		t.Fatalf("%d results", len(a.Results))
	}
	for _, r := range a.Results {
		m := r.PhotoMeta
		switch {
		case m == nil:
			t.Errorf("%s: no metadata", r.Path)
		case r.Path == p:
			// The fields and forms of `clipidx search --json`.
			if m.Taken != "2019-07-14T16:05:12+10:00" || m.TakenSource != "exif" || m.Place == nil || *m.Place != (Place{"Bondi Beach", "New South Wales", "Australia", "AU"}) ||
				m.GPS == nil || m.GPS.Lat != -33.8908 || m.GPS.Alt == nil || *m.GPS.Alt != 12.35 ||
				m.Camera == nil || *m.Camera != (Camera{"Apple", "iPhone 8", "back camera"}) || m.Width != 300 || m.Height != 200 {
				t.Errorf("%s: %+v %+v %+v %+v", r.Path, m, m.Place, m.GPS, m.Camera)
			}
		case m.TakenSource != "mtime" || m.Place != nil || m.GPS != nil:
			t.Errorf("%s (no EXIF): %+v", r.Path, m)
		}
	}
}

// TestAnswerExactGPSAndPath: an answer prints GPS without float noise (an
// EXIF rational gives 2.3522000000000003), marks a "taken" without an
// offset, and gives the bytes of a path that is not UTF-8 in path_bytes.
func TestAnswerExactGPSAndPath(t *testing.T) {
	e := &env{dir: photos(t)}
	bad := filepath.Join(e.dir, "bad\xff\xfename.png")
	copyFile(t, filepath.Join(e.dir, "wide_300x200.png"), bad)
	e.db = filepath.Join(t.TempDir(), "index.db")
	build(t, e.db, index.Options{}, e.dir)
	e.start(t, nil)
	p := filepath.Join(e.dir, "gray_260x200.png")
	w, err := store.OpenWriter(e.db, tiny(t).Identity(true), store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	b.PutMeta(p, store.Meta{Taken: 1563066000, TakenSource: store.TakenEXIF, HasGPS: true, Lat: 48.8566, Lon: 2.3522000000000003})
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, body, _ := e.get(t, "/api/search?k=50&q=photo")
	if code != http.StatusOK {
		t.Fatalf("search: %d %s", code, body)
	}
	if want := `"taken":"2019-07-14T01:00:00","taken_offset_unknown":true,"taken_source":"exif","gps":{"lat":48.8566,"lon":2.3522}`; !contains(body, want) {
		t.Errorf("answer %s\nwant %s", body, want)
	}
	var a struct {
		Results []struct {
			Path               string
			PathBytes          []byte `json:"path_bytes"`
			Taken              string
			TakenOffsetUnknown bool `json:"taken_offset_unknown"`
		}
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range a.Results {
		switch {
		case string(r.PathBytes) == bad:
			found = strings.Contains(r.Path, "\ufffd")
		case r.PathBytes != nil:
			t.Errorf("%s: path_bytes %q on a UTF-8 path", r.Path, r.PathBytes)
		case r.TakenOffsetUnknown && r.Path != p:
			t.Errorf("%s: taken %s with an offset, yet taken_offset_unknown", r.Path, r.Taken)
		}
	}
	if !found {
		t.Errorf("no result with path_bytes %q: %s", bad, body)
	}
}

// TestBrowserViewerPhotoLine: in Chromium, the viewer shows a result's
// date, place and camera in one line from the API's fields: the model
// alone when it names the make, the lens after it.
func TestBrowserViewerPhotoLine(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	e := &env{dir: photos(t), db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e.db, index.Options{}, e.dir)
	p := filepath.Join(e.dir, "wide_300x200.png")
	w, err := store.OpenWriter(e.db, tiny(t).Identity(true), store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	b.PutMeta(p, store.Meta{Taken: 1563120312, Offset: 600, HasOffset: true, TakenSource: store.TakenEXIF, HasGPS: true, Lat: -33.8908, Lon: 151.2743,
		City: "Bondi Beach", Region: "New South Wales", Country: "Australia", CountryCode: "AU", Make: "PENTAX", Model: "PENTAX K-1", Lens: "smc PENTAX-FA 31mm"})
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	e.start(t, func(o *Options) { o.Meta = func(s *store.Snapshot) search.Metadata { return s } })
	if a := e.search(t, "/api/search?q=camera:k-1"); len(a.Results) != 1 {
		t.Fatalf("camera:k-1: %d results, want 1", len(a.Results))
	}
	ctx := headless(t, exe, 90*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/?q=camera:k-1")); err != nil {
		t.Fatal(err)
	}
	waitPlayer(t, ctx, "the one result", `document.querySelectorAll('#grid .cell').length === 1`)
	if err := chromedp.Do(ctx, chromedp.Click("#grid .cell")); err != nil {
		t.Fatal(err)
	}
	waitPlayer(t, ctx, "the viewer", `document.getElementById('viewer').open && document.getElementById('meta').textContent !== ''`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('meta').textContent`))
	want := "2019-07-14 16:05 · Bondi Beach, New South Wales, Australia · PENTAX K-1 · smc PENTAX-FA 31mm"
	if err != nil || got != want {
		t.Errorf("viewer line %q (%v), want %q", got, err, want)
	}
}
