package web

import (
	"path/filepath"
	"testing"

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
			if m.Taken != "2019-07-14T16:05:12+10:00" || m.TakenSource != "exif" || m.Place == nil || m.Place.City != "Bondi Beach" ||
				m.GPS == nil || m.GPS.Lat != -33.8908 || m.Camera != "Apple iPhone 8 · back camera" {
				t.Errorf("%s: %+v %+v", r.Path, m, m.Place)
			}
		case m.TakenSource != "mtime" || m.Place != nil || m.GPS != nil:
			t.Errorf("%s (no EXIF): %+v", r.Path, m)
		}
	}
	if got := photoMeta(store.Meta{Make: "PENTAX", Model: "PENTAX K-1"}).Camera; got != "PENTAX K-1" {
		t.Errorf("camera %q, want the model alone when it names the make", got)
	}
}
