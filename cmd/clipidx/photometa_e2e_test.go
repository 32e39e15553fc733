package main

import (
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
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
		"-GPSLatitude=33.8908", "-GPSLatitudeRef=S", "-GPSLongitude=151.2743", "-GPSLongitudeRef=E", "-Make=Apple", "-Model=iPhone 8")
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
