package main

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/web"
)

// TestPhotoMetaEndToEnd: photos tagged with exiftool are built; search
// --json carries their date, place, GPS and camera, --long adds the date
// and place columns (plain output keeps its two), status counts them.
func TestPhotoMetaEndToEnd(t *testing.T) {
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("exiftool not found (Debian: apt-get install libimage-exiftool-perl)")
		}
		t.Skip("exiftool not found (Debian: apt-get install libimage-exiftool-perl)")
	}
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos, db := filepath.Join(root, "photos"), filepath.Join(root, "index.db")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, c color.RGBA, tags ...string) string {
		img := image.NewRGBA(image.Rect(0, 0, 64, 48))
		for i := range img.Pix {
			img.Pix[i] = []uint8{c.R, c.G, c.B, 255}[i%4]
		}
		p := filepath.Join(photos, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := jpeg.Encode(f, img, nil); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if len(tags) > 0 {
			if b, err := exec.Command(tool, append(append([]string{"-q", "-overwrite_original"}, tags...), p)...).CombinedOutput(); err != nil {
				t.Fatalf("exiftool: %v\n%s", err, b)
			}
		}
		return p
	}
	beach := mk("beach.jpg", color.RGBA{30, 120, 220, 255}, "-DateTimeOriginal=2019:07:14 16:05:12", "-OffsetTimeOriginal=+10:00",
		"-GPSLatitude=33.8908", "-GPSLatitudeRef=S", "-GPSLongitude=151.2743", "-GPSLongitudeRef=E", "-GPSAltitude=12.345", "-Make=Apple", "-Model=iPhone 8", "-LensModel=iPhone 8 back camera 3.99mm f/1.8")
	scan := mk("scan.jpg", color.RGBA{90, 60, 30, 255})
	old := time.Date(2015, 3, 4, 5, 6, 7, 0, time.Local)
	if err := os.Chtimes(scan, old, old); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", db, "--model", model, "--device", "reference"}
	run := func(args ...string) string {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(append([]string(nil), g...), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	run("build", photos)

	var hits []struct {
		Path        string
		Taken       string
		TakenSource string `json:"taken_source"`
		Place       *struct{ City, Region, Country, CountryCode string }
		GPS         *struct{ Lat, Lon float64 }
		Camera      *struct{ Make, Model, Lens string }
	}
	if err := json.Unmarshal([]byte(run("search", "--json", "-k", "2", "a photo")), &hits); err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		switch h.Path {
		case beach:
			if h.Taken != "2019-07-14T16:05:12+10:00" || h.TakenSource != "exif" || h.Place == nil || h.Place.City != "Bondi Beach" ||
				h.Place.Country != "Australia" || h.GPS == nil || h.GPS.Lat != -33.8908 || h.Camera == nil || h.Camera.Model != "iPhone 8" {
				t.Errorf("beach: %+v %+v %+v %+v", h, h.Place, h.GPS, h.Camera)
			}
		case scan:
			if h.TakenSource != "mtime" || !strings.HasPrefix(h.Taken, "2015-03-04T05:06:07") || h.Place != nil || h.GPS != nil || h.Camera != nil {
				t.Errorf("scan: %+v", h)
			}
		default:
			t.Errorf("unexpected hit %s", h.Path)
		}
	}
	// The web API gives each result the fields search --json gives, in
	// the same form.
	var cli []map[string]any
	if err := json.Unmarshal([]byte(run("search", "--json", "year:2015..2019")), &cli); err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Options{DB: db, Addr: "127.0.0.1:7357", Meta: metaSource})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:7357/api/search?q=year:2015..2019", nil))
	var api struct{ Results []map[string]any }
	if err := json.Unmarshal(rec.Body.Bytes(), &api); err != nil || rec.Code != 200 {
		t.Fatalf("/api/search: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if len(cli) != 2 || len(api.Results) != len(cli) {
		t.Fatalf("year:2015..2019: %d results from search --json, %d from the web API; want 2", len(cli), len(api.Results))
	}
	for i, h := range cli {
		if h["camera"] == nil && h["path"] == beach {
			t.Errorf("search --json %s: no camera", beach)
		}
		for _, k := range []string{"path", "taken", "taken_source", "taken_offset_unknown", "place", "gps", "camera", "width", "height", "motion"} {
			if a, b := fmt.Sprint(h[k]), fmt.Sprint(api.Results[i][k]); a != b {
				t.Errorf("result %d %q: search --json %s, web API %s", i, k, a, b)
			}
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(run("search", "-k", "2", "a photo")), "\n") {
		if n := len(strings.Split(l, "\t")); n != 2 {
			t.Errorf("plain line %q has %d columns, want 2", l, n)
		}
	}
	long := run("search", "--long", "-k", "2", "a photo")
	if !strings.Contains(long, beach+"\t2019-07-14 16:05\tBondi Beach, Australia\n") || !strings.Contains(long, scan+"\t~2015-03-04 05:06\t-\n") {
		t.Errorf("--long output:\n%s", long)
	}
	var st struct {
		Metadata struct {
			Records, GPS int
			FromFile     int `json:"from_file"`
			FromMtime    int `json:"from_mtime"`
			First, Last  string
		}
	}
	if err := json.Unmarshal([]byte(run("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if m := st.Metadata; m.Records != 2 || m.GPS != 1 || m.FromFile != 1 || m.FromMtime != 1 || !strings.HasPrefix(m.First, "2015-03-04") || !strings.HasPrefix(m.Last, "2019-07-14") {
		t.Errorf("status metadata %+v", m)
	}
	if out := run("status"); !strings.Contains(out, "gps:         1 of 2 images") || !strings.Contains(out, "dates:       2015-03-04 05:06 to 2019-07-14 16:05") {
		t.Errorf("status:\n%s", out)
	}
}
