package preprocess

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readFormat reads a file of testdata/formats (make_refs.py make_formats).
func readFormat(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUnsupportedTIFF: valid TIFFs that x/image/tiff cannot decode fail
// as unsupported, naming the feature, never as corrupt (which a later
// build that reads them would not retry); a damaged TIFF stays corrupt.
func TestUnsupportedTIFF(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"cmyk.tif", "unsupported image format: TIFF with CMYK colour model"},
		{"jpeg.tif", "unsupported image format: TIFF with JPEG compression"},
		{"float.tif", "unsupported image format: TIFF with floating-point samples"},
	} {
		_, f, err := decodeImage(readFormat(t, c.file), c.file, DefaultMaxPixels)
		if f != fmtTIFF || !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v %v, want %q", c.file, f, err, c.want)
		}
	}
	// An unsupported feature of a made-up value is named by the decoder.
	odd := bytes.Clone(readFormat(t, "cmyk.tif"))
	if !setTIFFTag(odd, 0x0106, 60000) {
		t.Fatal("cmyk.tif has no PhotometricInterpretation")
	}
	if _, _, err := decodeImage(odd, "odd.tif", DefaultMaxPixels); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "TIFF with color model") {
		t.Errorf("photometric 60000: %v", err)
	}
	bad := []byte("II*\x00\x08\x00\x00\x00\x00\x00")
	if _, _, err := decodeImage(bad, "bad.tif", DefaultMaxPixels); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a TIFF with no tags: %v, want corrupt", err)
	}
	if _, _, err := decodeImage(readTestdata(t, "rgb.tiff"), "rgb.tiff", DefaultMaxPixels); err != nil {
		t.Errorf("rgb.tiff: %v", err)
	}
}

// setTIFFTag overwrites the SHORT value of tag in IFD0 of a little-endian
// TIFF.
func setTIFFTag(d []byte, tag, v uint16) bool {
	le := binary.LittleEndian
	off := int(le.Uint32(d[4:]))
	for k := range int(le.Uint16(d[off:])) {
		e := d[off+2+12*k:]
		if le.Uint16(e) == tag {
			le.PutUint16(e[8:], v)
			return true
		}
	}
	return false
}

// TestAnimatedWebP: an animated WebP decodes to its first frame on the
// canvas, exactly as Pillow's first frame (its RGB stored as PNG beside
// each file): a lossless frame and a lossy one with alpha at an offset on
// a larger transparent canvas, and a lossy frame filling the canvas.
func TestAnimatedWebP(t *testing.T) {
	for _, name := range []string{"anim_lossless.webp", "anim_alpha.webp", "anim_lossy.webp"} {
		data := readFormat(t, name)
		if !webpAnimated(data) {
			t.Fatalf("%s is not an animated WebP", name)
		}
		got, err := Decode(data, name, 0, true)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want, err := Decode(readFormat(t, name+".pillow.png"), name, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Bounds() != want.Bounds() {
			t.Errorf("%s: %v, Pillow %v", name, got.Bounds(), want.Bounds())
			continue
		}
		if diff := countDiff(got.Pix, want.Pix); diff != 0 {
			t.Errorf("%s: %d of %d samples differ from Pillow's first frame", name, diff, len(got.Pix))
		}
		if _, err := Decode(data, name, 60*40-1, true); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: a 60x40 canvas over a limit of %d pixels: %v", name, 60*40-1, err)
		}
	}
	p := New(DefaultConfig(), Options{})
	if out, err := p.Bytes(readFormat(t, "anim_alpha.webp"), "anim_alpha.webp"); err != nil || len(out) != 3*224*224 {
		t.Errorf("Processor.Bytes: %d values, %v", len(out), err)
	}
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestAnimatedWebPDamaged: a truncated or inconsistent animation is a
// corrupt WebP, never a panic nor an unsupported format.
func TestAnimatedWebPDamaged(t *testing.T) {
	data := readFormat(t, "anim_alpha.webp")
	anmf := bytes.Index(data, []byte("ANMF")) + 8
	outside := bytes.Clone(data)
	outside[anmf] = 20 // x = 40: a 36-pixel-wide frame past the 60-pixel canvas
	noFrame := bytes.ReplaceAll(data, []byte("ANMF"), []byte("XXXX"))
	cases := map[string][]byte{"frame outside the canvas": outside, "no ANMF": noFrame}
	// Only the first frame is read (as gif.Decode reads only the first
	// frame of a GIF): a file cut after it decodes.
	end := anmf + int(binary.LittleEndian.Uint32(data[anmf-4:]))
	for n := 30; n < end; n += 5 {
		cases[fmt.Sprintf("cut at %d of %d", n, len(data))] = data[:n]
	}
	if _, _, err := decodeImage(data[:end], "a.webp", DefaultMaxPixels); err != nil {
		t.Errorf("cut after the first frame: %v", err)
	}
	for what, d := range cases {
		_, _, err := decodeImage(d, "a.webp", DefaultMaxPixels)
		if !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "panic") {
			t.Errorf("%s: %v, want a corrupt WebP", what, err)
		}
	}
}

// FuzzAnimatedWebP: whatever the chunks say, decoding never panics and
// yields the canvas the header announces.
func FuzzAnimatedWebP(f *testing.F) {
	for _, name := range []string{"anim_lossless.webp", "anim_alpha.webp", "anim_lossy.webp"} {
		f.Add(readFormat(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !webpAnimated(data) {
			return
		}
		img, _, err := decodeImage(data, "f.webp", 1<<16)
		if err != nil {
			if strings.Contains(err.Error(), "panic") {
				t.Fatal(err)
			}
			return
		}
		if img.Bounds() != image.Rect(0, 0, uint24(data[24:])+1, uint24(data[27:])+1) {
			t.Fatalf("%v for the canvas of the VP8X chunk", img.Bounds())
		}
	})
}
