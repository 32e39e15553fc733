package preprocess

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// readF32 reads a little-endian float32 file.
func readF32(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
	}
	return out
}

type refImage struct {
	Name      string `json:"name"`
	File      string `json:"file"`
	SizeWH    [2]int `json:"size_wh"`
	ResizedHW [2]int `json:"resized_hw"`
	CropTL    [2]int `json:"crop_top_left"`
	Pixels    string `json:"pixel_values_file"`
}

// TestFixturePixels is the acceptance test of the package: every fixture PNG
// must reproduce its reference pixel_values with 0 differing values.
func TestFixturePixels(t *testing.T) {
	dir := fixtures.TinyModel(t)
	raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Images []refImage `json:"images"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Images) != 7 {
		t.Fatalf("reference.json has %d images, want 7", len(ref.Images))
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := New(cfg, Options{IgnoreEXIF: true})
	for _, im := range ref.Images {
		t.Run(im.Name, func(t *testing.T) {
			rw, rh := shortestEdgeSize(im.SizeWH[0], im.SizeWH[1], cfg.ShortestEdge)
			if rh != im.ResizedHW[0] || rw != im.ResizedHW[1] {
				t.Errorf("resized to %dx%d, reference %dx%d", rw, rh, im.ResizedHW[1], im.ResizedHW[0])
			}
			if top, left := cropOffset(rh, 224), cropOffset(rw, 224); top != im.CropTL[0] || left != im.CropTL[1] {
				t.Errorf("crop at top %d left %d, reference %v", top, left, im.CropTL)
			}
			got, err := p.File(filepath.Join(dir, im.File))
			if err != nil {
				t.Fatal(err)
			}
			want := readF32(t, filepath.Join(dir, im.Pixels))
			if len(got) != len(want) {
				t.Fatalf("got %d values, want %d", len(got), len(want))
			}
			diff, maxd := 0, 0.0
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					diff++
					maxd = max(maxd, math.Abs(float64(got[i]-want[i])))
				}
			}
			if diff != 0 {
				t.Errorf("%d of %d values differ (max %g)", diff, len(got), maxd)
			}
		})
	}
}
