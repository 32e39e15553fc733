package preprocess

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

func TestLoadConfig(t *testing.T) {
	cfg, err := LoadConfig(fixtures.TinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg != DefaultConfig() {
		t.Errorf("tiny-clip-h config %+v, want the ViT-H/14 defaults %+v", cfg, DefaultConfig())
	}
	if _, err := LoadConfig(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: error %v, want fs.ErrNotExist", err)
	}
}

func TestParseConfig(t *testing.T) {
	def := DefaultConfig()
	with := func(f func(*Config)) Config { c := def; f(&c); return c }
	for _, tc := range []struct {
		json string
		want Config
		err  string
	}{
		{`{}`, def, ""},
		{`{"size": 256, "crop_size": 240}`, with(func(c *Config) { c.ShortestEdge, c.CropWidth, c.CropHeight = 256, 240, 240 }), ""},
		{`{"size": {"height": 384, "width": 320}}`, with(func(c *Config) { c.ShortestEdge, c.ResizeHeight, c.ResizeWidth = 0, 384, 320 }), ""},
		{`{"crop_size": {"height": 200, "width": 300}}`, with(func(c *Config) { c.CropHeight, c.CropWidth = 200, 300 }), ""},
		{`{"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}`, with(func(c *Config) { c.Mean, c.Std = [3]float32{.5, .5, .5}, [3]float32{.5, .5, .5} }), ""},
		{`{"do_center_crop": false, "do_normalize": false, "rescale_factor": 0.5}`, with(func(c *Config) { c.SkipCenterCrop, c.SkipNormalize, c.RescaleFactor = true, true, 0.5 }), ""},
		{`{"resample": 2}`, Config{}, "resample 2"},
		{`{"image_mean": [0.5]}`, Config{}, "image_mean"},
		{`{"image_std": [0.5, 0, 0.5]}`, Config{}, "image_std[1] is zero"},
		{`{"size": {"longest_edge": 5}}`, Config{}, "size"},
		{`{"crop_size": {"shortest_edge": 5}}`, Config{}, "crop_size"},
		{`{"size": {"shortest_edge": -3}}`, Config{}, "out of range"},
		{`[`, Config{}, "parse"},
	} {
		got, err := ParseConfig([]byte(tc.json))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.json, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.json, got, err, tc.want)
		}
	}
}

// TestNormalizeSpec checks the lookup table against section 5 of the spec
// computed directly, and the switches that turn parts of it off.
func TestNormalizeSpec(t *testing.T) {
	def := DefaultConfig()
	lut := normLUT(def)
	for c := 0; c < 3; c++ {
		m := float32(float32(def.Mean[c]) * 255) // rounded here: no fused multiply-subtract (arm64)
		s := float32(float32(def.Std[c]) * 255)
		for v := 0; v < 256; v++ {
			want := float32(float32(v)-m) / s
			if lut[c][v] != want {
				t.Fatalf("channel %d value %d: %v, want %v", c, v, lut[c][v], want)
			}
		}
	}
	// Division, not multiplication by the reciprocal: they differ somewhere.
	differs := false
	for v := 0; v < 256; v++ {
		m, s := float32(def.Mean[0])*255, float32(def.Std[0])*255
		differs = differs || lut[0][v] != float32(float32(v)-m)*(1/s)
	}
	if !differs {
		t.Error("the table would not notice a reciprocal multiplication")
	}
	noNorm := def
	noNorm.SkipNormalize = true
	if got := normLUT(noNorm)[1][51]; got != float32(51)*float32(1.0/255) {
		t.Errorf("rescale only: %v", got)
	}
	noNorm.SkipRescale = true
	if got := normLUT(noNorm)[2][200]; got != 200 {
		t.Errorf("neither: %v", got)
	}
}

func TestGeometry(t *testing.T) {
	for _, tc := range []struct {
		w, h, rw, rh, offX, offY int
	}{
		{451, 300, 336, 224, 56, 0},
		{640, 427, 335, 224, 55, 0},
		{4000, 300, 2986, 224, 1381, 0},
		{50, 30, 373, 224, 74, 0},
		{20, 20, 224, 224, 0, 0},
		{300, 451, 224, 336, 0, 56},
		{249, 224, 249, 224, 12, 0}, // odd excess: floor
	} {
		g, err := New(DefaultConfig(), Options{}).geometry(tc.w, tc.h)
		if err != nil || g.rw != tc.rw || g.rh != tc.rh || g.offX != tc.offX || g.offY != tc.offY {
			t.Errorf("%dx%d: got %+v %v, want %dx%d at (%d,%d)", tc.w, tc.h, g, err, tc.rw, tc.rh, tc.offX, tc.offY)
		}
	}
	if _, err := New(DefaultConfig(), Options{}).geometry(1, 50000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("1x50000: error %v, want ErrTooLarge", err)
	}
}

// TestPadding covers a crop larger than the resized image (zero padding in
// uint8, as HF pads before cropping) and the skipped resize.
func TestPadding(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SkipResize = true
	cfg.CropWidth, cfg.CropHeight = 8, 6
	p := New(cfg, Options{})
	// 5x3 image of value 200: padded left (8-5)/2=1, right 2, top 1, bottom 2.
	m := image.NewGray(image.Rect(0, 0, 5, 3))
	for i := range m.Pix {
		m.Pix[i] = 200
	}
	out := p.Image(m)
	if len(out) != 3*8*6 {
		t.Fatalf("%d values", len(out))
	}
	zero, full := p.lut[0][0], p.lut[0][200]
	for y := 0; y < 6; y++ {
		for x := 0; x < 8; x++ {
			want := zero
			if x >= 1 && x < 6 && y >= 1 && y < 4 {
				want = full
			}
			if got := out[y*8+x]; got != want {
				t.Fatalf("(%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

// TestImageMatchesFile checks that Image on a decoded picture equals File.
func TestImageMatchesFile(t *testing.T) {
	path := filepath.Join("testdata", "images", "rgba_transparent.png")
	p := New(DefaultConfig(), Options{})
	want, err := p.File(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Image(img); tensorSHA(got) != tensorSHA(want) {
		t.Error("Image and File differ")
	}
	if New(Config{}, Options{}).Image(img) != nil {
		t.Error("Image with an invalid config returned a tensor")
	}
}

// TestColourTypes checks the fast paths against the generic conversion for
// every concrete image type, on sub-images with odd offsets.
func TestColourTypes(t *testing.T) {
	r := image.Rect(0, 0, 13, 7)
	fill := func(set func(x, y int, v uint8)) {
		for y := 0; y < 7; y++ {
			for x := 0; x < 13; x++ {
				set(x, y, uint8(x*19+y*37))
			}
		}
	}
	gray := image.NewGray(r)
	fill(func(x, y int, v uint8) { gray.SetGray(x, y, color.Gray{v}) })
	gray16 := image.NewGray16(r)
	fill(func(x, y int, v uint8) { gray16.SetGray16(x, y, color.Gray16{uint16(v)<<8 | 0x7f}) })
	nrgba := image.NewNRGBA(r)
	fill(func(x, y int, v uint8) { nrgba.SetNRGBA(x, y, color.NRGBA{v, v ^ 0x55, 255 - v, 255}) })
	nrgba64 := image.NewNRGBA64(r)
	fill(func(x, y int, v uint8) {
		nrgba64.SetNRGBA64(x, y, color.NRGBA64{uint16(v) << 8, uint16(v^0x55)<<8 | 3, 0xffff - uint16(v)<<8, 0xffff})
	})
	rgba := image.NewRGBA(r)
	fill(func(x, y int, v uint8) { rgba.SetRGBA(x, y, color.RGBA{v, v / 2, 0, 255}) })
	rgba64 := image.NewRGBA64(r)
	fill(func(x, y int, v uint8) { rgba64.SetRGBA64(x, y, color.RGBA64{uint16(v) << 8, 0, 0x1234, 0xffff}) })
	pal := image.NewPaletted(r, color.Palette{color.RGBA{1, 2, 3, 255}, color.NRGBA{200, 100, 50, 0}, color.Gray{77}})
	fill(func(x, y int, v uint8) { pal.SetColorIndex(x, y, v%3) })
	cmyk := image.NewCMYK(r)
	fill(func(x, y int, v uint8) { cmyk.SetCMYK(x, y, color.CMYK{v, 255 - v, v / 3, v / 5}) })
	sub := image.Rect(3, 1, 12, 6)
	for _, img := range []image.Image{gray, gray16, nrgba, nrgba64, rgba, rgba64, pal, cmyk} {
		for _, m := range []image.Image{img, img.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(sub)} {
			got, w, h := toRGB(nil, m, yccJFIF)
			b := m.Bounds()
			if w != b.Dx() || h != b.Dy() {
				t.Fatalf("%T: %dx%d", m, w, h)
			}
			i := 0
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					want := expectRGB(m.At(x, y))
					if !bytes.Equal(got[i:i+3], want[:]) {
						t.Fatalf("%T at (%d,%d): %v, want %v", m, x, y, got[i:i+3], want)
					}
					i += 3
				}
			}
		}
	}
}

// expectRGB is the documented colour rule per colour model, one pixel at a
// time: straight colour under alpha, high byte of 16-bit samples, Pillow's
// CMYK formula.
func expectRGB(c color.Color) [3]byte {
	switch c := c.(type) {
	case color.Gray:
		return [3]byte{c.Y, c.Y, c.Y}
	case color.Gray16:
		return [3]byte{byte(c.Y >> 8), byte(c.Y >> 8), byte(c.Y >> 8)}
	case color.NRGBA:
		return [3]byte{c.R, c.G, c.B}
	case color.NRGBA64:
		return [3]byte{byte(c.R >> 8), byte(c.G >> 8), byte(c.B >> 8)}
	case color.CMYK:
		f := func(v byte) byte { // (255-k) - round(v*(255-k)/255)
			nk := 255 - int(c.K)
			return byte(nk - int(math.Round(float64(int(v)*nk)/255)))
		}
		return [3]byte{f(c.C), f(c.M), f(c.Y)}
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return [3]byte{n.R, n.G, n.B}
}

func TestPillowCMYK(t *testing.T) {
	// Spot values printed by Pillow 9.4:
	// Image.new("CMYK", (1, 1), (c, c, c, k)).convert("RGB"). (The formula
	// was checked against Pillow on all 65536 (c, k) pairs with numpy.)
	for _, tc := range []struct{ c, k, want byte }{
		{0, 0, 255}, {255, 0, 0}, {0, 255, 0}, {128, 0, 127}, {100, 50, 125}, {200, 100, 33},
		{255, 255, 0}, {37, 211, 38}, {250, 3, 5},
	} {
		if got := cmykToRGB(tc.c, tc.k); got != tc.want {
			t.Errorf("c=%d k=%d: %d, want %d", tc.c, tc.k, got, tc.want)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		data, name string
		want       format
	}{
		{"\xff\xd8\xff\xe0", "a.png", fmtJPEG},
		{"\x89PNG\r\n\x1a\n", "a.jpg", fmtPNG},
		{"GIF89a", "", fmtGIF},
		{"RIFF\x00\x00\x00\x00WEBPVP8 ", "", fmtWebP},
		{"RIFF\x00\x00\x00\x00AVI ", "", fmtUnknown},
		{"BM" + strings.Repeat("\x00", 30), "", fmtBMP},
		{"II*\x00\x08\x00\x00\x00", "scan.tif", fmtTIFF},
		{"MM\x00*\x00\x00\x00\x08", "x.ARW", fmtRAW},
		{"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1heic", "", fmtHEIC},
		{"\x00\x00\x00\x18ftypisom\x00\x00\x00\x00isomavc1", "clip.mp4", fmtUnknown},
		{"8BPS", "", fmtPSD},
		{"", "", fmtUnknown},
	} {
		if got, _ := sniff([]byte(tc.data), tc.name); got != tc.want {
			t.Errorf("%q (%s): %s, want %s", tc.data, tc.name, got, tc.want)
		}
	}
}

// TestConcurrent runs one Processor from several goroutines (run with -race)
// and compares with sequential results.
func TestConcurrent(t *testing.T) {
	names := []string{"orient6.jpg", "panorama.png", "anim.gif", "rgb16.png", "tall.png", "orient5.png"}
	p := New(DefaultConfig(), Options{})
	want := map[string]string{}
	for _, n := range names {
		out, err := p.File(filepath.Join("testdata", "images", n))
		if err != nil {
			t.Fatal(err)
		}
		want[n] = tensorSHA(out)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(names))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				n := names[(i+g)%len(names)]
				out, err := p.File(filepath.Join("testdata", "images", n))
				if err == nil && tensorSHA(out) != want[n] {
					err = fmt.Errorf("%s differs when run concurrently", n)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
