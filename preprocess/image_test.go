package preprocess

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"slices"
	"strings"
	"testing"
)

// TestDecode checks the display decode against Pillow's exif_transpose of
// the same JPEG (orient6.pillow.png), and its pixel limit.
func TestDecode(t *testing.T) {
	data := readTestdata(t, "orient6.jpg")
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data, "orient6.jpg", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := png.Decode(bytes.NewReader(readTestdata(t, "orient6.pillow.png")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds() != ref.Bounds() || got.Bounds().Dx() != cfg.Height {
		t.Fatalf("orient6.jpg: %v, Pillow %v, stored %dx%d", got.Bounds(), ref.Bounds(), cfg.Width, cfg.Height)
	}
	worst := 0
	for y := 0; y < ref.Bounds().Dy(); y++ {
		for x := 0; x < ref.Bounds().Dx(); x++ {
			r, g, b, _ := ref.At(x, y).RGBA()
			p := got.RGBAAt(x, y)
			for i, v := range []uint32{r >> 8, g >> 8, b >> 8} {
				worst = max(worst, absInt(int(v)-int([]uint8{p.R, p.G, p.B}[i])))
			}
			if p.A != 0xff {
				t.Fatalf("alpha %d at %d,%d", p.A, x, y)
			}
		}
	}
	if worst > 2 {
		t.Errorf("orient6.jpg differs from Pillow by up to %d levels", worst)
	}
	if kept, err := Decode(data, "orient6.jpg", 0, true); err != nil || kept.Bounds().Dx() != cfg.Width {
		t.Errorf("ignoreEXIF: %v %v, want the stored %dx%d", kept.Bounds(), err, cfg.Width, cfg.Height)
	}
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 300, 200)))
	if _, err := Decode(buf.Bytes(), "big.png", 50_000, false); !errors.Is(err, ErrTooLarge) {
		t.Errorf("60000 pixels over a limit of 50000: %v", err)
	}
	if _, err := Decode([]byte("text"), "x.jpg", 0, false); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("text: %v", err)
	}
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestFormatsMatchTheDecoders: Formats lists exactly the sniffed formats
// that decodeImage does not refuse as unsupported (a bare header then
// fails as corrupt, not unsupported), sorted. Camera RAW depends on the
// preview a file carries, so it is only required to be listed.
func TestFormatsMatchTheDecoders(t *testing.T) {
	got := Formats()
	if !slices.IsSorted(got) || !slices.Contains(got, "raw") || !slices.Contains(got, "jpeg") {
		t.Errorf("Formats() = %q, want a sorted list with jpeg and raw", got)
	}
	if (errNoWASM == nil) != slices.Contains(got, "heic") || (errNoWASM == nil) != slices.Contains(got, "avif") {
		t.Errorf("Formats() = %q with the embedded HEIC/AVIF decoders built: %v", got, errNoWASM == nil)
	}
	headers := map[string]string{
		"jpeg": "\xff\xd8\xff\xe0",
		"png":  "\x89PNG\r\n\x1a\n",
		"gif":  "GIF89a",
		"webp": "RIFF\x00\x00\x00\x00WEBPVP8 ",
		"bmp":  "BM" + strings.Repeat("\x00", 30),
		"tiff": "II*\x00\x08\x00\x00\x00\x00\x00",
		"heic": "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic",
		"avif": "\x00\x00\x00\x18ftypavif\x00\x00\x00\x00mif1avif",
		"jxl":  "\xff\x0a\xfa\x7f",
		"psd":  "8BPS\x00\x01",
	}
	for name, h := range headers {
		f, _ := sniff([]byte(h), "x")
		if formatIDs[f] != name {
			t.Fatalf("header of %s sniffs as %v", name, f)
		}
		_, _, err := decodeImage([]byte(h), "x", DefaultMaxPixels)
		if listed := slices.Contains(got, name); listed == errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: listed %v, but decoding a header gives %v", name, listed, err)
		}
	}
}
