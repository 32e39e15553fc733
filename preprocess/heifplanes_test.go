package preprocess

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// heifPhoto16 is a 16-bit w x h picture with what exposes chroma
// resampling: smooth gradients, a saturated disc, hard edges and noise
// (the picture of testdata/heif/make.sh).
func heifPhoto16(w, h int, seed int64) *image.NRGBA64 {
	m := image.NewNRGBA64(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewSource(seed))
	fw, fh := float64(w), float64(h)
	radius := float64(min(w, h)) * 0.25
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x), float64(y)
			r := 128 + 100*math.Sin(fx/fw*5+float64(seed))
			g := 128 + 100*math.Cos(fy/fh*4)
			b := 255 * (fx + fy) / (fw + fh)
			if math.Hypot(fx-fw*0.6, fy-fh*0.4) < radius {
				r, g, b = 230, 20, 40
			}
			if x < w/8 {
				r = 10
			}
			if y < h/8 {
				g = 250
			}
			c := func(v float64) uint16 {
				v = math.Min(math.Max(v+rng.NormFloat64()*6, 0), 255)
				return uint16(math.Round(v * 257))
			}
			m.SetNRGBA64(x, y, color.NRGBA64{c(r), c(g), c(b), 0xffff})
		}
	}
	return m
}

// heifTo8 keeps the high byte of each sample.
func heifTo8(m *image.NRGBA64) *image.NRGBA {
	out := image.NewNRGBA(m.Rect)
	for i := range out.Pix {
		out.Pix[i] = m.Pix[2*i]
	}
	return out
}

// heifTensorGate compares the model input made from a HEIF file with the
// one made from reference RGB: mean |diff| under 0.02 and max under 0.5 of
// the normalised tensor, the gates every HEIC file must meet.
func heifTensorGate(t testing.TB, data []byte, name string, want []byte, w, h int) {
	t.Helper()
	p := New(DefaultConfig(), Options{})
	got, err := p.Bytes(data, name)
	if err != nil {
		t.Fatal(err)
	}
	ref := p.Image(rgbImage(want, w, h))
	maxd, sum := 0.0, 0.0
	for i := range got {
		d := math.Abs(float64(got[i] - ref[i]))
		maxd, sum = max(maxd, d), sum+d
	}
	mean := sum / float64(len(got))
	t.Logf("tensor: max |diff| %.4f, mean %.5f", maxd, mean)
	if mean >= 0.02 || maxd >= 0.5 {
		t.Errorf("tensor differs from heif-convert's by max %.4f, mean %.5f (gates 0.5, 0.02)", maxd, mean)
	}
}

// TestHEIFCodedItem: HEICs whose primary item is coded (hvc1, not a grid:
// heif-enc writes them so from 128x96 up), 8- and 10-bit. libheif, asked
// for YCbCr, resampled their 4:2:0 chroma to 4:4:4 and back, up to 68
// levels off at colour edges; the planes must now come through as coded,
// exact at 8 bits and, at 10, within the 2 levels lost by libheif's own
// 10-to-8 shift of the planes.
func TestHEIFCodedItem(t *testing.T) {
	pic := heifPhoto16(256, 192, 2)
	for _, tc := range []struct {
		name string
		img  image.Image
		args []string
		tol  heifTol
	}{
		{"8bit", heifTo8(pic), []string{"-q", "80"}, heifTol{0, 0}},
		{"10bit", pic, []string{"-b", "10", "-q", "80"}, heifTol{2, 256 * 192 * 3 / 2}},
		{"10bit-444", pic, []string{"-b", "10", "-q", "80", "-p", "chroma=444"}, heifTol{2, 256 * 192 * 3 / 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := heifEncode(t, tc.img, tc.args...)
			info, err := parseHEIF(data)
			if err != nil {
				t.Fatal(err)
			}
			if info.itemType != "hvc1" {
				t.Fatalf("heif-enc wrote a primary item of type %q, want hvc1", info.itemType)
			}
			got, w, h := heifDecodedRGB(t, data, tc.name+".heic")
			want, ww, wh := heifConvert(t, data, ".heic")
			if w != ww || h != wh {
				t.Fatalf("decoded %dx%d, heif-convert %dx%d", w, h, ww, wh)
			}
			heifCheckClose(t, got, want, tc.tol)
			heifTensorGate(t, data, tc.name+".heic", want, w, h)
		})
	}
}

// heifEncodeJPEG encodes a JPEG file with heif-enc and args (heif-enc
// keeps its EXIF block).
func heifEncodeJPEG(t testing.TB, file []byte, args ...string) []byte {
	t.Helper()
	enc := heifNeedTool(t, "heif-enc")
	dir := t.TempDir()
	src, out := filepath.Join(dir, "in.jpg"), filepath.Join(dir, "out.heic")
	if err := os.WriteFile(src, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(enc, append(args, src, "-o", out)...).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc %v: %v\n%s", args, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jpegWithOrientation encodes img as a JPEG whose EXIF says orientation o.
func jpegWithOrientation(t testing.TB, img image.Image, o uint16) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return withOrientation(b.Bytes(), o)
}

// withOrientation returns the JPEG data with an EXIF segment saying
// orientation o inserted after its SOI marker.
func withOrientation(data []byte, o uint16) []byte {
	app1 := append([]byte("Exif\x00\x00"), tiffBlock(binary.BigEndian, tagOrientation, 3, 1, uint32(o))...)
	seg := append([]byte{0xff, 0xe1, byte((len(app1) + 2) >> 8), byte(len(app1) + 2)}, app1...)
	return append(append([]byte{0xff, 0xd8}, seg...), data[2:]...)
}

// TestHEIFIrotWithEXIF: a HEIC with an irot (and imir) property and an
// EXIF orientation. libheif applies irot/imir and heif-convert writes
// orientation 1 into the EXIF it keeps; pillow-heif, through which Hugging
// Face's pipeline opens a HEIC, resets the EXIF orientation to 1 likewise,
// so EXIF is not applied on top. The decode must match heif-convert's,
// for a coded item and for an odd-sized grid (chroma planes of odd size).
func TestHEIFIrotWithEXIF(t *testing.T) {
	for _, size := range [][2]int{{256, 192}, {255, 191}} {
		src := jpegWithOrientation(t, heifTo8(heifPhoto16(size[0], size[1], 3)), 6)
		data := heifEncodeJPEG(t, src, "-q", "80")
		if o := exifOrientationHEIFItem(data); o != 6 {
			t.Fatalf("heif-enc kept EXIF orientation %d, want 6", o)
		}
		for _, tc := range []struct {
			name  string
			props [][]byte
		}{
			{"irot1", [][]byte{irotBox(1)}},
			{"irot3+imir1", [][]byte{irotBox(3), imirBox(1)}},
		} {
			name := tc.name + "-" + map[bool]string{true: "coded", false: "grid"}[size[0]%2 == 0]
			t.Run(name, func(t *testing.T) {
				file := heifAddProps(t, data, false, tc.props...)
				got, w, h := heifDecodedRGB(t, file, "r.heic")
				want, ww, wh := heifConvert(t, file, ".heic")
				if w != ww || h != wh || w != size[1] {
					t.Fatalf("decoded %dx%d, heif-convert %dx%d, want %d wide", w, h, ww, wh, size[1])
				}
				heifCheckClose(t, got, want, heifTol{0, 0})
				heifTensorGate(t, file, "r.heic", want, w, h)
			})
		}
	}
}

// exifOrientationHEIFItem finds the orientation in the EXIF block of a
// HEIF file (its TIFF header searched in the bytes), or 0.
func exifOrientationHEIFItem(data []byte) int {
	for _, magic := range []string{"MM\x00*", "II*\x00"} {
		if i := bytes.Index(data, []byte(magic)); i >= 0 {
			return tiffOrientation(data[i:])
		}
	}
	return 0
}

// TestGBRIPMA: the GBR colr property is associated with every ipma entry
// that has no nclx, in both index widths, and a rewrite that does not fit
// the box's fields is refused (heifNeutralise is then used).
func TestGBRIPMA(t *testing.T) {
	isNCLX := []bool{false, true, false} // property 2 is a colr nclx
	for _, tc := range []struct {
		name    string
		in      []byte
		idx     int
		want    []byte
		wantErr bool
	}{
		{"narrow", []byte{0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 2, 0x81, 3, 0, 2, 2, 0x81, 2},
			4, []byte{0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 3, 0x81, 3, 4, 0, 2, 2, 0x81, 2}, false},
		{"wide", []byte{1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7, 1, 0x80, 1},
			300, []byte{1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7, 2, 0x80, 1, 0x01, 0x2c}, false},
		{"narrow-full", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1}, 128, nil, true},
		{"truncated", []byte{0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 3, 1}, 4, nil, true},
	} {
		got, err := gbrIPMA(tc.in, isNCLX, tc.idx)
		if (err != nil) != tc.wantErr || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	full := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0xff}
	full = append(full, make([]byte, 0xff)...)
	if _, err := gbrIPMA(full, isNCLX, 4); err == nil {
		t.Error("an entry with 255 associations took another")
	}
}

// TestHEIFPlanesFileLayout: the rewritten file keeps every offset (the old
// meta box becomes free space of its size), including when the last box
// runs to the end of the file (size 0), and decodes as the original.
func TestHEIFPlanesFileLayout(t *testing.T) {
	orig := readHEIFTestdata(t, "yuv420.heic")
	want, _, _ := heifDecodedRGB(t, orig, "a.heic")
	toEnd := bytes.Clone(orig)
	at, _, _, err := topBox(toEnd, "mdat")
	if err != nil || len(toEnd)-at != int(binary.BigEndian.Uint32(toEnd[at:])) {
		t.Fatalf("mdat is not the last box of the test file (%v)", err)
	}
	binary.BigEndian.PutUint32(toEnd[at:], 0)
	for name, data := range map[string][]byte{"as made": orig, "mdat to end": toEnd} {
		info, err := heifHeader(data)
		if err != nil {
			t.Fatal(err)
		}
		file, ok := heifPlanesFile(data, info)
		if !ok {
			t.Fatalf("%s: not rewritten", name)
		}
		if !bytes.Equal(file[:len(data)][at+8:], data[at+8:]) {
			t.Errorf("%s: the coded data moved or changed", name)
		}
		if got, _, _ := heifDecodedRGB(t, data, "a.heic"); !bytes.Equal(got, want) {
			t.Errorf("%s: decodes differently", name)
		}
	}
}

// TestHEIFMatrixRowExact converts every (Y, Cb, Cr) triple with
// heifConv.matrixRow and with heifConv.rgb under matrices 1, 5, 6 and 9
// (BT.709, BT.601, BT.2020), full and limited range, and the default
// without a colr box: the two must agree on every sample.
func TestHEIFMatrixRowExact(t *testing.T) {
	src := make([]byte, 4*256*256) // one Cr: Y along x, Cb along y
	dst := make([]byte, 3*256*256)
	for _, c := range []nclx{{matrix: 1, fullRange: true}, {matrix: 1}, {matrix: 5, fullRange: true}, {matrix: 6},
		{matrix: 9}, {matrix: 2, fullRange: true}} {
		v := newHeifConv(c, 8)
		bad := 0
		for cr := range 256 {
			for cb := range 256 {
				for y := range 256 {
					p := src[(cb*256+y)*4:]
					p[0], p[1], p[2], p[3] = byte(cr), byte(y), byte(cb), 255
				}
			}
			if !v.matrixRow(dst, src) {
				t.Fatalf("%+v: matrixRow declined", c)
			}
			for i := range 256 * 256 {
				p := src[i*4:]
				r, g, b := v.rgb(p[1], p[2], p[0])
				if d := dst[i*3:]; d[0] != r || d[1] != g || d[2] != b {
					if bad++; bad <= 3 {
						t.Errorf("%+v: Y %d Cb %d Cr %d: matrixRow %v, rgb %v", c, p[1], p[2], p[0], d[:3], []byte{r, g, b})
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("%+v: %d triples differ", c, bad)
		}
	}
	for _, c := range []nclx{{matrix: 0, fullRange: true}, {matrix: 8, fullRange: true}} {
		if newHeifConv(c, 8).matrixRow(dst, src) {
			t.Errorf("%+v: matrixRow took a matrix it does not compute", c)
		}
	}
	if newHeifConv(nclx{matrix: 1}, 10).matrixRow(dst, src) {
		t.Error("matrixRow took 10-bit samples")
	}
}

// BenchmarkHEIFConvertRow times the conversion of libheif's GBR output of
// a 12 MP photo (BT.601 limited range) to packed RGB: gbrToRGB, and the
// per-pixel heifConv.rgb it replaced.
func BenchmarkHEIFConvertRow(b *testing.B) {
	const w, h = 4000, 3000
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i*7919>>3 ^ i)
	}
	c := nclx{matrix: 6}
	b.Run("matrixRow", func(b *testing.B) {
		for b.Loop() {
			releaseDecoded(gbrToRGB(img, c, 8))
		}
	})
	b.Run("rgb", func(b *testing.B) {
		v := newHeifConv(c, 8)
		out := make([]byte, w*h*3)
		for b.Loop() {
			for i := range w * h {
				p, d := img.Pix[i*4:i*4+4:i*4+4], out[i*3:i*3+3:i*3+3]
				d[0], d[1], d[2] = v.rgb(p[1], p[2], p[0])
			}
		}
	})
}
