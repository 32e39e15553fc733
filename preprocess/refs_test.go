package preprocess

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"image"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// refs.json is made by testdata/make_refs.py, an independent numpy
// transcription of the spec checked against the shared fixtures (see
// testdata/README.md).
type refs struct {
	Files []struct {
		File   string `json:"file"`
		EXIF   bool   `json:"exif"`
		SHA256 string `json:"sha256"`
	} `json:"files"`
	JPEGEXIF []struct {
		File      string `json:"file"`
		PillowPNG string `json:"pillow_png"`
		Exact     bool   `json:"exact"`
	} `json:"jpeg_exif"`
	Synthetic []struct {
		W, H   int
		Kind   string `json:"kind"`
		SHA256 string `json:"sha256"`
	} `json:"synthetic"`
	Resizes []struct {
		W, H, RW, RH int
		Kind         string `json:"kind"`
		SHA256       string `json:"sha256"`
	} `json:"resizes"`
}

func loadRefs(t testing.TB) refs {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "refs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r refs
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func tensorSHA(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[i*4:], math.Float32bits(f))
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// synthetic is the deterministic test image of make_refs.py: "saw" has sharp
// sawtooth edges (bicubic overshoot, clamping), "noise" is a hash per sample.
func synthetic(w, h int, kind string) []byte {
	out := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				var v uint32
				if kind == "saw" {
					v = uint32(x + 2*y + 40*c)
				} else {
					v = uint32(x)*0x9E3779B1 + uint32(y)*0x85EBCA77 + uint32(c)*0xC2B2AE3D
					v ^= v >> 15
					v *= 0x2C1B3C6D
					v ^= v >> 12
					v >>= 24
				}
				out[(y*w+x)*3+c] = byte(v)
			}
		}
	}
	return out
}

// rgbImage wraps packed RGB as an opaque *image.RGBA.
func rgbImage(rgb []byte, w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		copy(m.Pix[i*4:], rgb[i*3:i*3+3])
		m.Pix[i*4+3] = 255
	}
	return m
}

// TestReferenceFiles checks decoders, colour modes and EXIF orientation
// (PNG eXIf, exact) against the numpy reference.
func TestReferenceFiles(t *testing.T) {
	r := loadRefs(t)
	if len(r.Files) < 30 {
		t.Fatalf("refs.json has %d file cases", len(r.Files))
	}
	on, off := New(DefaultConfig(), Options{}), New(DefaultConfig(), Options{IgnoreEXIF: true})
	for _, c := range r.Files {
		name := c.File
		if c.EXIF {
			name += "+exif"
		}
		t.Run(name, func(t *testing.T) {
			p := off
			if c.EXIF {
				p = on
			}
			got, err := p.File(filepath.Join("testdata", "images", c.File))
			if err != nil {
				t.Fatal(err)
			}
			if s := tensorSHA(got); s != c.SHA256 {
				t.Errorf("sha256 %s, reference %s", s[:16], c.SHA256[:16])
			}
		})
	}
}

// TestReferenceJPEGEXIF compares rotated JPEGs (and a lossy WebP) decoded by
// Go with Pillow's decoding of the same files (stored as PNG, already
// transposed). The colour conversion and chroma upsampling are libjpeg's
// (see TestDecoderColourExact), but the IDCTs differ by a level here and
// there. The bound allows that and is far too tight for a wrong rotation.
func TestReferenceJPEGEXIF(t *testing.T) {
	r := loadRefs(t)
	on, off := New(DefaultConfig(), Options{}), New(DefaultConfig(), Options{IgnoreEXIF: true})
	compared := 0
	defer func() {
		if compared == 0 {
			t.Error("no approximate JPEG/WebP case in refs.json: nothing was compared")
		}
	}()
	for _, c := range r.JPEGEXIF {
		if c.Exact {
			continue
		}
		compared++
		t.Run(c.File, func(t *testing.T) {
			got, err := on.File(filepath.Join("testdata", "images", c.File))
			if err != nil {
				t.Fatal(err)
			}
			want, err := off.File(filepath.Join("testdata", "images", c.PillowPNG))
			if err != nil {
				t.Fatal(err)
			}
			maxd, sum := 0.0, 0.0
			for i := range got {
				d := math.Abs(float64(got[i] - want[i]))
				maxd, sum = max(maxd, d), sum+d
			}
			// One 8-bit level is about 0.015 after normalisation.
			mean := sum / float64(len(got))
			t.Logf("max |diff| %.4f, mean %.5f", maxd, mean)
			if mean > 0.002 || maxd > 0.1 { // a few levels at most
				t.Errorf("max |diff| %.4f, mean %.5f", maxd, mean)
			}
		})
	}
}

// TestReferenceSynthetic runs whole pipelines on large and odd sizes,
// including a 12-megapixel image, without files.
func TestReferenceSynthetic(t *testing.T) {
	r := loadRefs(t)
	p := New(DefaultConfig(), Options{})
	for _, c := range r.Synthetic {
		if testing.Short() && c.W*c.H > 4e6 {
			continue
		}
		got := p.Image(rgbImage(synthetic(c.W, c.H, c.Kind), c.W, c.H))
		if s := tensorSHA(got); s != c.SHA256 {
			t.Errorf("%dx%d %s: sha256 %s, reference %s", c.W, c.H, c.Kind, s[:16], c.SHA256[:16])
		}
	}
}

// TestReferenceResizes checks the uint8 resize alone on random sizes, up and
// down, from 1 pixel to 1600.
func TestReferenceResizes(t *testing.T) {
	r := loadRefs(t)
	if len(r.Resizes) < 100 {
		t.Fatalf("refs.json has %d resizes", len(r.Resizes))
	}
	bad := 0
	for _, c := range r.Resizes {
		src := synthetic(c.W, c.H, c.Kind)
		dst := make([]byte, c.RW*c.RH*3)
		resizeCrop(dst, src, geometry{w: c.W, h: c.H, rw: c.RW, rh: c.RH, cw: c.RW, ch: c.RH}, nil)
		s := sha256.Sum256(dst)
		if hex.EncodeToString(s[:]) != c.SHA256 {
			bad++
			if bad <= 5 {
				t.Errorf("%dx%d -> %dx%d %s differs from the reference", c.W, c.H, c.RW, c.RH, c.Kind)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d resizes differ", bad, len(r.Resizes))
	}
}

// TestDecoderColourExact checks colour conversion against Pillow bit for
// bit where the decoded planes are known to be identical:
//   - JPEGs made of flat 16x16 blocks, whose DCT blocks hold only a DC term
//     that every IDCT reconstructs exactly; this pins libjpeg's fancy chroma
//     upsampling (4:2:0, 4:2:2, 4:4:0, odd sizes, the replicated chroma of
//     4:1:1 and of narrow images), its YCbCr matrix, Adobe CMYK and gray;
//   - lossy WebPs (VP8 decoding is exact by specification), with and
//     without alpha, odd and even sizes: libwebp's fancy upsampling and
//     BT.601 matrix.
func TestDecoderColourExact(t *testing.T) {
	r := loadRefs(t)
	n := 0
	for _, c := range r.JPEGEXIF {
		if !c.Exact {
			continue
		}
		n++
		t.Run(c.File, func(t *testing.T) {
			rgb := func(name string) ([]byte, int, int) {
				img, f, err := decodeImage(readTestdata(t, name), name, DefaultMaxPixels)
				if err != nil {
					t.Fatal(err)
				}
				return toRGB(nil, img, yccFor(f))
			}
			got, w, h := rgb(c.File)
			want, ww, wh := rgb(c.PillowPNG)
			if w != ww || h != wh {
				t.Fatalf("%dx%d, Pillow %dx%d", w, h, ww, wh)
			}
			diff := 0
			for i := range got {
				if got[i] != want[i] {
					diff++
				}
			}
			if diff != 0 {
				t.Errorf("%d of %d samples differ from Pillow", diff, len(got))
			}
		})
	}
	if n < 12 {
		t.Fatalf("only %d exact cases", n)
	}
}
