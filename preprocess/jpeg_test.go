package preprocess

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// jpegRefs is testdata/jpeg/refs.json, made by make_jpeg_refs.py from
// Pillow 9.4 (libjpeg-turbo 2.1.5): Pillow's RGB and the preprocessed
// tensor of each JPEG, or the error Pillow raised.
type jpegRefs struct {
	Pillow string `json:"pillow"`
	Cases  []struct {
		File         string `json:"file"`
		FileSHA256   string `json:"file_sha256"`
		W, H         int
		RGBSHA256    string `json:"rgb_sha256"`
		TensorSHA256 string `json:"tensor_sha256"`
		Error        string `json:"error"`
		// "djpeg": Pillow cannot read the file (an arithmetic-coded
		// JPEG over its 64 KB read block), libjpeg-turbo's djpeg is the
		// reference.
		Reference   string `json:"reference"`
		PillowError string `json:"pillow_error"`
	} `json:"cases"`
}

// jpegCaseData reads a corpus file; "goroot:NAME" is one of Go's own test
// JPEGs, skipped when this toolchain's copy is missing or not the one
// referenced (see goJPEGMissing).
func jpegCaseData(t *testing.T, file, wantSHA string) []byte {
	t.Helper()
	if name, ok := strings.CutPrefix(file, "goroot:"); ok {
		root := os.Getenv("GOROOT")
		if root == "" {
			root = runtime.GOROOT()
		}
		path := filepath.Join(root, "src", "image", "testdata", name)
		b, err := os.ReadFile(path)
		if err != nil {
			goJPEGMissing(t, fmt.Sprintf("Go's test JPEG %s cannot be read: %v", path, err))
		}
		if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != wantSHA {
			goJPEGMissing(t, fmt.Sprintf("Go's test JPEG %s has sha256 %x, refs.json was made from %s (another Go version?)", path, s, wantSHA))
		}
		return b
	}
	b, err := os.ReadFile(filepath.Join("testdata", "jpeg", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goJPEGMissing skips a case read from Go's own test images, with the
// reason, except under CI=true, where those cases must run: a skip there
// would hide that they were never compared.
func goJPEGMissing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: these cases must run; install a Go whose image/testdata matches, or refresh refs.json with make_jpeg_refs.py)")
	}
	t.Skip(msg + " (not compared; under CI=true this fails)")
}

// TestJPEGMatchesPillow decodes every corpus JPEG and Go's test JPEGs and
// requires Pillow's RGB bytes exactly, then the whole pipeline's tensor
// exactly; files Pillow refuses must be refused (except arithmetic-coded
// files over Pillow's read block, compared with djpeg's decoding).
func TestJPEGMatchesPillow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "jpeg", "refs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var refs jpegRefs
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatal(err)
	}
	if len(refs.Cases) < 60 {
		t.Fatalf("refs.json has %d cases", len(refs.Cases))
	}
	p := New(DefaultConfig(), Options{IgnoreEXIF: true})
	for _, c := range refs.Cases {
		t.Run(c.File, func(t *testing.T) {
			data := jpegCaseData(t, c.File, c.FileSHA256)
			img, f, err := decodeImage(data, c.File, DefaultMaxPixels)
			if c.Error != "" {
				if err == nil {
					t.Fatalf("decoded, Pillow refuses it: %s", c.Error)
				}
				t.Logf("refused: %v (Pillow: %s)", err, c.Error)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Reference != "" {
				t.Logf("reference from %s; Pillow fails: %s", c.Reference, c.PillowError)
			}
			rgb, w, h := toRGB(nil, img, yccJFIF)
			if f != fmtJPEG || w != c.W || h != c.H {
				t.Fatalf("%v %dx%d, Pillow %dx%d", f, w, h, c.W, c.H)
			}
			if s := sha256.Sum256(rgb); hex.EncodeToString(s[:]) != c.RGBSHA256 {
				t.Errorf("RGB differs from Pillow's")
				jpegDebugDiff(t, c.File, rgb)
			}
			out, err := p.Bytes(data, c.File)
			if err != nil {
				t.Fatal(err)
			}
			if s := tensorSHA(out); s != c.TensorSHA256 {
				t.Errorf("tensor sha256 %s, reference %s", s[:16], c.TensorSHA256[:16])
			}
		})
	}
}

// jpegDebugDiff logs how many samples differ from Pillow's RGB dumped by
// hand into $JPEG_PILLOW_DIR/NAME.rgb (Image.open(f).convert("RGB")
// .tobytes()), when that is set: a debugging aid only.
func jpegDebugDiff(t *testing.T, file string, rgb []byte) {
	dir := os.Getenv("JPEG_PILLOW_DIR")
	if dir == "" {
		return
	}
	want, err := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(file, "goroot:")+".rgb"))
	if err != nil || len(want) != len(rgb) {
		return
	}
	n, maxd, first := 0, 0, -1
	for i := range rgb {
		if d := int(rgb[i]) - int(want[i]); d != 0 {
			n++
			maxd = max(maxd, d, -d)
			if first < 0 {
				first = i
			}
		}
	}
	t.Logf("%d of %d samples differ, max %d, first at sample %d", n, len(rgb), maxd, first)
}

// BenchmarkJPEGDecoder12MP is our decoder on the 4000x3000 photo of
// BenchmarkJPEG12MP, to packed RGB; BenchmarkJPEGStdlib12MP is
// image/jpeg on the same file (YCbCr planes, no colour conversion), and
// BenchmarkJPEGStdlibRGB12MP adds the conversion to packed RGB that the
// pipeline needed on top of it before.
func BenchmarkJPEGDecoder12MP(b *testing.B) {
	data := jpeg12()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		if _, _, err := decodeJPEGImage(data, "bench.jpg", DefaultMaxPixels); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJPEGStdlib12MP(b *testing.B) {
	data := jpeg12()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJPEGStdlibRGB12MP(b *testing.B) {
	data := jpeg12()
	b.SetBytes(int64(len(data)))
	var buf []byte
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		buf, _, _ = toRGB(buf, img, yccJFIF)
	}
}

// jpegSegments builds a JPEG from marker segments: each is a marker byte
// and its payload (the length field is added).
func jpegSegments(segs ...[]byte) []byte {
	out := []byte{0xff, 0xd8}
	for _, s := range segs {
		out = append(out, 0xff, s[0])
		if s[0] == mEOI {
			continue
		}
		n := len(s) + 1
		out = append(out, byte(n>>8), byte(n))
		out = append(out, s[1:]...)
	}
	return out
}

// TestJPEGRefuses checks that unsupported and malformed files are refused
// with an error that says why, never decoded into nonsense or a panic.
func TestJPEGRefuses(t *testing.T) {
	dqt := append([]byte{mDQT, 0}, bytes.Repeat([]byte{1}, 64)...)
	// One DC table whose only 1-bit code is symbol 0; one AC table whose
	// only code is EOB.
	dht := []byte{mDHT, 0x00, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	sof := func(marker, bits byte, w, h int, comps ...byte) []byte {
		s := []byte{marker, bits, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(len(comps) / 3)}
		return append(s, comps...)
	}
	grey := sof(mSOF0, 8, 8, 8, 1, 0x11, 0)
	sos := []byte{mSOS, 1, 1, 0x00, 0, 63, 0}
	data := []byte{0x00} // DC size 0, then EOB; padding to the byte
	scan := func(segs ...[]byte) []byte {
		b := jpegSegments(segs...)
		return append(append(b, data...), 0xff, mEOI)
	}
	ok := scan(dqt, dht, grey, sos)
	if _, _, err := decodeJPEGImage(ok, "ok.jpg", DefaultMaxPixels); err != nil {
		t.Fatalf("the well-formed base case fails: %v", err)
	}
	bigDC := bytes.Clone(dht)
	bigDC[18] = 16 // DC symbol 16: a size over 15
	for _, tc := range []struct {
		name string
		data []byte
		want error
		text string
	}{
		{"12-bit", scan(dqt, dht, sof(mSOF1, 12, 8, 8, 1, 0x11, 0), sos), ErrUnsupported, "12-bit"},
		{"hierarchical", scan(dqt, dht, sof(0xcd, 8, 8, 8, 1, 0x11, 0), sos), ErrUnsupported, "hierarchical"},
		{"bad DAC", scan(dqt, []byte{mDAC, 0x00, 0x12}, grey, sos), ErrCorrupt, "DAC value"},
		{"lossless", scan(dqt, dht, sof(0xc3, 8, 8, 8, 1, 0x11, 0), sos), ErrUnsupported, "lossless"},
		{"2 components", scan(dqt, dht, sof(mSOF0, 8, 8, 8, 1, 0x11, 0, 2, 0x11, 0), sos), ErrUnsupported, "2-component"},
		{"sampling 0", scan(dqt, dht, sof(mSOF0, 8, 8, 8, 1, 0x01, 0), sos), ErrCorrupt, "sampling"},
		{"fractional sampling", scan(dqt, dht, sof(mSOF0, 8, 8, 8, 1, 0x31, 0, 2, 0x21, 0, 3, 0x11, 0),
			[]byte{mSOS, 3, 1, 0, 2, 0, 3, 0, 0, 63, 0}), ErrUnsupported, "fractional"},
		{"DC size 16", scan(dqt, bigDC, grey, sos), ErrCorrupt, "DC Huffman"},
		{"no Huffman table", scan(dqt, grey, sos), ErrCorrupt, "Huffman table 0 not defined"},
		{"no quantization table", scan(dht, grey, sos), ErrCorrupt, "quantization table 0"},
		{"scan names unknown component", scan(dqt, dht, grey, []byte{mSOS, 1, 9, 0, 0, 63, 0}), ErrCorrupt, "component 9"},
		{"zero width", scan(dqt, dht, sof(mSOF0, 8, 0, 8, 1, 0x11, 0), sos), ErrCorrupt, "0x8"},
		{"duplicate frame", scan(dqt, dht, grey, grey, sos), ErrCorrupt, "duplicate"},
		{"no EOI", ok[:len(ok)-2], ErrCorrupt, "truncated"},
		{"cut in the data", jpegSegments(dqt, dht, sof(mSOF0, 8, 64, 64, 1, 0x11, 0), sos), ErrCorrupt, "truncated"},
		{"no SOI", ok[2:], ErrCorrupt, "SOI"},
		{"no scan", jpegSegments(dqt, dht, grey, []byte{mEOI}), ErrCorrupt, "no image"},
		{"unknown marker", scan(dqt, dht, []byte{0xc8, 0}, grey, sos), ErrUnsupported, "0xc8"},
		{"bad progression", scan(dqt, dht, sof(mSOF2, 8, 8, 8, 1, 0x11, 0), []byte{mSOS, 1, 1, 0, 0, 5, 0}), ErrCorrupt, "progression"},
		{"over the limit", jpegSegments(sof(mSOF2, 8, 40000, 30000, 1, 0x11, 0)), ErrTooLarge, "40000x30000"},
		{"too many scans", func() []byte {
			// Empty DC scans over a 2048x2048 grey image: cheap to write,
			// each a pass over 65536 blocks.
			segs := [][]byte{dqt, dht, sof(mSOF2, 8, 2048, 2048, 1, 0x11, 0)}
			for range 2 * maxJPEGBlockPass {
				segs = append(segs, []byte{mSOS, 1, 1, 0x00, 0, 0, 0})
			}
			return jpegSegments(append(segs, []byte{mEOI})...)
		}(), ErrCorrupt, "times over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeJPEGImage(tc.data, "x.jpg", DefaultMaxPixels)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), "x.jpg") {
				t.Fatalf("error %v, want %v saying %q and naming the file", err, tc.want, tc.text)
			}
		})
	}
}

// addJPEGSeeds adds corpus files of every kind (sampling, progressive,
// restarts, grey, YCCK, arithmetic) and more, whole and cut short, as
// seeds of a JPEG fuzz test.
func addJPEGSeeds(f *testing.F, more ...string) {
	for _, name := range append([]string{"pil_420_q50_17x9.jpg", "pil_prog_444_17x9.jpg", "cjpeg_restart1b_prog_411_97x35.jpg",
		"jpegtran_partial_16x9.jpg", "pil_grey_prog_31x7.jpg", "ycck_adobe2.jpg", "bad_rst_sequence.jpg",
		"cjpeg_arithmetic_97x35.jpg"}, more...) {
		b, err := os.ReadFile(filepath.Join("testdata", "jpeg", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)*3/4])
	}
}

// FuzzJPEG feeds arbitrary bytes to the decoder itself (not through
// safely, which would hide a panic): it must return an error or an image
// within the pixel limit, whose RGB has the announced size.
func FuzzJPEG(f *testing.F) {
	addJPEGSeeds(f, "jpegtran_arithmetic_partial_97x35.jpg")
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &jpegDecoder{data: data, maxPixels: limit}
		img, err := d.decode()
		if err != nil {
			if img != nil {
				t.Fatal("an image and an error")
			}
			return
		}
		m := img.(*packedRGB)
		if m.W <= 0 || m.H <= 0 || m.W*m.H > limit || len(m.Pix) != m.W*m.H*3 {
			t.Fatalf("%dx%d image, %d bytes", m.W, m.H, len(m.Pix))
		}
	})
}

// TestJPEGEXIFExact: with the decoder exact, an EXIF-rotated JPEG must give
// exactly the tensor of Pillow's decoding after ImageOps.exif_transpose
// (stored losslessly beside it), where refs_test.go allows a level.
func TestJPEGEXIFExact(t *testing.T) {
	on, off := New(DefaultConfig(), Options{}), New(DefaultConfig(), Options{IgnoreEXIF: true})
	for _, o := range []int{3, 6, 8} {
		got, err := on.File(filepath.Join("testdata", "images", fmt.Sprintf("orient%d.jpg", o)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := off.File(filepath.Join("testdata", "images", fmt.Sprintf("orient%d.pillow.png", o)))
		if err != nil {
			t.Fatal(err)
		}
		if tensorSHA(got) != tensorSHA(want) {
			t.Errorf("orientation %d: tensor differs from Pillow's transposed decoding", o)
		}
	}
}
