package preprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// heifDecodedRGB runs the decode half of Processor.Bytes: decode, packed RGB,
// orientation. It returns packed RGB [h, w, 3].
func heifDecodedRGB(t testing.TB, data []byte, name string) ([]byte, int, int) {
	t.Helper()
	img, f, err := decodeImage(data, name, DefaultMaxPixels)
	if err != nil {
		t.Fatal(err)
	}
	rgb, w, h := toRGB(nil, img, yccJFIF)
	if o := exifOrientation(data, f); o != 1 {
		rot := make([]byte, len(rgb))
		w, h = orient(rot, rgb, w, h, o)
		rgb = rot
	}
	return rgb, w, h
}

// heifPNGRGB reads a reference PNG as packed 8-bit RGB (16-bit samples by their
// high byte, as this package reduces 16-bit PNGs).
func heifPNGRGB(t testing.TB, path string) ([]byte, int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return toRGB(nil, img, yccJFIF)
}

// heifRGBDiff compares two packed RGB images: how many samples differ and by
// how much at most.
func heifRGBDiff(a, b []byte) (n, maxd int) {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		if d != 0 {
			n++
		}
		maxd = max(maxd, d)
	}
	return n, maxd
}

// heifTol is how far a decode may be from heif-convert's: at most max
// levels, in at most count samples.
type heifTol struct{ max, count int }

// heifTolerance holds the differences measured against heif-convert
// (Debian 12: libheif 1.15.1, libde265 1.0.11) for the files of
// testdata/heif. 8-bit HEICs are exact: the coded planes come through
// unchanged (heifplanes.go) and are converted with libheif's arithmetic.
// 10-bit HEICs lose 2 bits to the embedded libheif's own 10-to-8 shift of
// the planes before the conversion (heif-convert converts at 10 bits and
// shifts the RGB), so about a third of the samples are off by 1-2 levels.
// AVIF is off by 1 (libavif's own conversion, where heif-convert uses
// libheif's).
var heifTolerance = map[string]heifTol{
	"yuv420.heic":       {0, 0},
	"yuv422.heic":       {0, 0},
	"yuv444.heic":       {0, 0},
	"exif6.heic":        {0, 0},
	"yuv420_10bit.heic": {2, 3700},
	"yuv420.avif":       {1, 2100},
	"yuv444.avif":       {1, 2100},
	"yuv420_10bit.avif": {81, 7600},
}

// heifNeedTool skips the test when a command-line tool is missing, except
// under CI=true, where it fails.
func heifNeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (Debian: apt-get install libheif-examples)", name)
		}
		t.Skipf("%s not found (Debian: apt-get install libheif-examples)", name)
	}
	return p
}

// heifConvert decodes a HEIF/AVIF file with heif-convert into packed RGB.
func heifConvert(t testing.TB, data []byte, ext string) ([]byte, int, int) {
	t.Helper()
	tool := heifNeedTool(t, "heif-convert")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"+ext), filepath.Join(dir, "out.png")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(tool, in, out).CombinedOutput(); err != nil {
		t.Fatalf("heif-convert: %v\n%s", err, msg)
	}
	return heifPNGRGB(t, out)
}

func heifCheckClose(t testing.TB, got, want []byte, tol heifTol) {
	t.Helper()
	n, maxd := heifRGBDiff(got, want)
	t.Logf("%d of %d samples differ, max %d", n, len(got), maxd)
	if maxd > tol.max || n > tol.count {
		t.Errorf("%d samples differ by up to %d; tolerance %d samples, %d levels", n, maxd, tol.count, tol.max)
	}
}

// TestHEIFMatchesHeifConvert decodes the files made by testdata/heif/make.sh
// and compares them with heif-convert's PNGs of the same files.
func TestHEIFMatchesHeifConvert(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "heif", "*.heic"))
	avifs, _ := filepath.Glob(filepath.Join("testdata", "heif", "*.avif"))
	files = append(files, avifs...)
	if len(files) != len(heifTolerance) {
		t.Fatalf("found %d HEIC/AVIF files, want %d", len(files), len(heifTolerance))
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, w, h := heifDecodedRGB(t, data, name)
			want, ww, wh := heifPNGRGB(t, path+".png")
			if w != ww || h != wh {
				t.Fatalf("decoded %dx%d, heif-convert %dx%d", w, h, ww, wh)
			}
			tol, ok := heifTolerance[name]
			if !ok {
				t.Fatalf("no tolerance for %s", name)
			}
			heifCheckClose(t, got, want, tol)
		})
	}
}

// TestAVIFMatchesAvifdec compares AVIF decodes with libavif's own avifdec
// (Debian's libavif 0.11): exact, 16-bit output by its high byte.
func TestAVIFMatchesAvifdec(t *testing.T) {
	for _, name := range []string{"yuv420_10bit.avif", "yuv444.avif"} {
		got, w, h := heifDecodedRGB(t, readHEIFTestdata(t, name), name)
		want, ww, wh := heifPNGRGB(t, filepath.Join("testdata", "heif", name+".avifdec.png"))
		if w != ww || h != wh {
			t.Fatalf("%s: decoded %dx%d, avifdec %dx%d", name, w, h, ww, wh)
		}
		if n, maxd := heifRGBDiff(got, want); n != 0 {
			t.Errorf("%s: %d samples differ from avifdec, max %d", name, n, maxd)
		}
	}
}

// TestHEIFPlanesExact compares the Y, Cb, Cr planes of a 4:2:0 HEIC, as
// the file rewritten by heifPlanesFile brings them out of libheif, with
// heif-convert's y4m output: the HEVC decoders must agree, and nothing may
// resample the chroma on the way. heif-convert (libheif 1.15) builds a
// grid in RGB and converts it back to YCbCr for y4m, which changes the
// planes where some pixel of a 2x2 chroma block falls outside 0..255 in
// RGB; only there may they differ (the RGB itself is exact, see
// TestHEIFMatchesHeifConvert).
func TestHEIFPlanesExact(t *testing.T) {
	data := readHEIFTestdata(t, "yuv420.heic")
	y4m := readHEIFTestdata(t, "yuv420.heic.y4m")
	info, err := heifHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	file, ok := heifPlanesFile(data, info)
	if !ok {
		t.Fatal("heifPlanesFile could not rewrite the file")
	}
	img, err := libheifDecode(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	rgba, ok := img.(*image.NRGBA)
	if !ok {
		t.Fatalf("decoded %T, want RGBA holding the planes", img)
	}
	// R=Cr, G=Y, B=Cb, chroma at full resolution.
	m := image.NewYCbCr(rgba.Rect, image.YCbCrSubsampleRatio444)
	for i := range m.Y {
		p := rgba.Pix[rgba.PixOffset(i%rgba.Rect.Dx(), i/rgba.Rect.Dx()):]
		m.Cr[i], m.Y[i], m.Cb[i] = p[0], p[1], p[2]
	}
	i := bytes.Index(y4m, []byte("FRAME\n"))
	if i < 0 {
		t.Fatal("no FRAME in y4m")
	}
	pl := y4m[i+6:]
	w, h := m.Rect.Dx(), m.Rect.Dy()
	cw, ch := (w+1)/2, (h+1)/2
	if len(pl) != w*h+2*cw*ch {
		t.Fatalf("y4m frame has %d bytes for %dx%d", len(pl), w, h)
	}
	// clips tells whether pixel x, y leaves 0..255 in BT.601 full range.
	clips := func(x, y int) bool {
		yy := float64(m.Y[m.YOffset(x, y)])
		cb, cr := float64(m.Cb[m.COffset(x, y)])-128, float64(m.Cr[m.COffset(x, y)])-128
		for _, v := range []float64{yy + 1.402*cr, yy - 0.344136*cb - 0.714136*cr, yy + 1.772*cb} {
			if v < -0.5 || v >= 255.5 {
				return true
			}
		}
		return false
	}
	blockClips := func(x, y int) bool {
		x, y = x&^1, y&^1
		return clips(x, y) || clips(min(x+1, w-1), y) || clips(x, min(y+1, h-1)) || clips(min(x+1, w-1), min(y+1, h-1))
	}
	same, clipped := 0, 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := w*h + (y/2)*cw + x/2
			switch {
			case m.Y[m.YOffset(x, y)] == pl[y*w+x] && m.Cb[m.COffset(x, y)] == pl[c] && m.Cr[m.COffset(x, y)] == pl[c+cw*ch]:
				same++
			case blockClips(x, y):
				clipped++
			default:
				t.Errorf("pixel %d,%d: Y, Cb, Cr %d %d %d, heif-convert %d %d %d", x, y,
					m.Y[m.YOffset(x, y)], m.Cb[m.COffset(x, y)], m.Cr[m.COffset(x, y)], pl[y*w+x], pl[c], pl[c+cw*ch])
			}
		}
	}
	t.Logf("%d pixels equal, %d differ where RGB clips", same, clipped)
	if same < w*h*99/100 {
		t.Errorf("only %d of %d pixels equal", same, w*h)
	}
}

func readHEIFTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "heif", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHEIFIgnoresEXIFOrientation: exif6.heic carries EXIF orientation 6 and
// no irot; libheif shows it as stored, and so must this package (HEIF
// transformations come from irot/imir only, so nothing is rotated twice).
func TestHEIFIgnoresEXIFOrientation(t *testing.T) {
	data := readHEIFTestdata(t, "exif6.heic")
	o := 0
	for _, magic := range []string{"MM\x00*", "II*\x00"} {
		if i := bytes.Index(data, []byte(magic)); i >= 0 {
			o = tiffOrientation(data[i:])
		}
	}
	if o != 6 {
		t.Fatalf("test file's EXIF orientation is %d, want 6", o)
	}
	if got := exifOrientation(data, fmtHEIC); got != 1 {
		t.Errorf("orientation %d applied to a HEIC, want 1", got)
	}
	_, w, h := heifDecodedRGB(t, data, "exif6.heic")
	if w != 64 || h != 40 {
		t.Errorf("decoded %dx%d, want 64x40 as stored", w, h)
	}
}

// TestHEIFColour adds nclx colr boxes to the test files and compares with
// heif-convert on the edited files: the matrix and range the file declares
// must be the ones used.
func TestHEIFColour(t *testing.T) {
	for _, file := range []string{"yuv420.heic", "yuv444.heic"} {
		orig := readHEIFTestdata(t, file)
		plain, _, _ := heifDecodedRGB(t, orig, file)
		for _, c := range []struct {
			name         string
			prim, matrix uint16
			full         bool
		}{
			{"bt601-full", 1, 6, true},
			{"bt601-limited", 1, 6, false},
			{"bt709-full", 1, 1, true},
			{"bt709-limited", 1, 1, false},
			{"bt2020-limited", 9, 9, false},
			{"p3-chroma-derived", 12, 12, true},
		} {
			t.Run(file+"/"+c.name, func(t *testing.T) {
				data := heifAddProps(t, orig, true, nclxBox(c.prim, 13, c.matrix, c.full))
				info, err := parseHEIF(data)
				if err != nil || info.colour == nil || info.colour.matrix != c.matrix {
					t.Fatalf("edited file: %+v, %v", info, err)
				}
				got, w, h := heifDecodedRGB(t, data, file)
				want, ww, wh := heifConvert(t, data, ".heic")
				if w != ww || h != wh {
					t.Fatalf("decoded %dx%d, heif-convert %dx%d", w, h, ww, wh)
				}
				heifCheckClose(t, got, want, heifTol{0, 0})
				if n, _ := heifRGBDiff(got, plain); (n == 0) != (c.matrix == 6 && c.full) {
					t.Errorf("%d samples differ from the file without colr", n)
				}
			})
		}
	}
}

// TestHEIFToRGBYCgCo: matrix 8 (YCgCo, H.273 equations 50-52 inverted:
// R = Y - Cg + Co, G = Y + Cg, B = Y - Cg - Co) clamps to 0..255. No test
// file carries it, so the samples are set by hand.
func TestHEIFToRGBYCgCo(t *testing.T) {
	m := image.NewYCbCr(image.Rect(0, 0, 3, 1), image.YCbCrSubsampleRatio444)
	copy(m.Y, []byte{100, 250, 5})
	copy(m.Cb, []byte{128 + 10, 128 + 20, 128 - 20}) // Cg
	copy(m.Cr, []byte{128 + 20, 128 + 10, 128 - 10}) // Co
	got := heifToRGB(m, nclx{matrix: 8, fullRange: true}).Pix
	want := []byte{110, 110, 70, 240, 255, 220, 15, 0, 35}
	if !bytes.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestHEIFTransforms adds irot/imir to HEIC and AVIF files and compares with
// heif-convert, which applies them: libheif applies them for HEIC, this
// package for AVIF (libavif does not).
func TestHEIFTransforms(t *testing.T) {
	for _, file := range []string{"yuv420.heic", "yuv420.avif"} {
		orig := readHEIFTestdata(t, file)
		for _, tc := range []struct {
			name  string
			props [][]byte
		}{
			{"irot1", [][]byte{irotBox(1)}},
			{"irot2", [][]byte{irotBox(2)}},
			{"irot3", [][]byte{irotBox(3)}},
			{"imir0", [][]byte{imirBox(0)}},
			{"imir1", [][]byte{imirBox(1)}},
			{"irot1+imir0", [][]byte{irotBox(1), imirBox(0)}},
			{"imir0+irot1", [][]byte{imirBox(0), irotBox(1)}},
		} {
			t.Run(file+"/"+tc.name, func(t *testing.T) {
				data := heifAddProps(t, orig, false, tc.props...)
				got, w, h := heifDecodedRGB(t, data, file)
				want, ww, wh := heifConvert(t, data, filepath.Ext(file))
				if w != ww || h != wh {
					t.Fatalf("decoded %dx%d, heif-convert %dx%d", w, h, ww, wh)
				}
				heifCheckClose(t, got, want, heifTolerance[file])
				// irot/imir are geometry, not EXIF: IgnoreEXIF keeps them.
				a, err1 := New(DefaultConfig(), Options{}).Bytes(data, file)
				b, err2 := New(DefaultConfig(), Options{IgnoreEXIF: true}).Bytes(data, file)
				if err1 != nil || err2 != nil || !slices.Equal(a, b) {
					t.Errorf("IgnoreEXIF changes a HEIF with %s (%v, %v)", tc.name, err1, err2)
				}
			})
		}
	}
}

// TestHEIFPixelLimit: the limit is checked from ispe, before any decoder
// runs (no memory is allocated for pixels).
func TestHEIFPixelLimit(t *testing.T) {
	for _, file := range []string{"yuv420.heic", "yuv420.avif"} {
		data := heifSetISPE(readHEIFTestdata(t, file), 100000, 100000)
		var err error
		a := bytesAllocated(func() { _, err = New(DefaultConfig(), Options{}).Bytes(data, file) })
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "100000x100000") {
			t.Errorf("%s: error %v, want ErrTooLarge naming 100000x100000", file, err)
		}
		if a > 4<<20 {
			t.Errorf("%s: allocated %d KB on a refused file", file, a>>10)
		}
		// Just over the limit, from the real size.
		_, err = New(DefaultConfig(), Options{MaxPixels: 67*45 - 1}).Bytes(readHEIFTestdata(t, file), file)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s at 1 pixel under its size: error %v", file, err)
		}
	}
}

// TestHEIFHostile: truncated and garbled files give per-file errors naming
// the file, never a panic.
func TestHEIFHostile(t *testing.T) {
	p := New(DefaultConfig(), Options{})
	for _, file := range []string{"yuv420.heic", "yuv444.avif"} {
		orig := readHEIFTestdata(t, file)
		for _, n := range []int{12, 40, 200, len(orig) / 2, len(orig) - 10} {
			_, err := p.Bytes(orig[:n], file)
			if n <= 200 && err == nil {
				t.Errorf("%s cut at %d decoded", file, n)
			}
			// Cut late in the coded data, a decoder may still give a picture.
			if err != nil && !strings.Contains(err.Error(), file) {
				t.Errorf("%s cut at %d: error %v does not name the file", file, n, err)
			}
		}
		// Garble the coded data (mdat) but not the header: the decoder
		// itself must fail or give some picture, never crash.
		g := bytes.Clone(orig)
		if i := bytes.Index(g, []byte("mdat")); i > 0 {
			for j := i + 20; j < len(g); j += 5 {
				g[j] ^= 0xa5
			}
		}
		if _, err := p.Bytes(g, file); err != nil && !strings.Contains(err.Error(), file) {
			t.Errorf("garbled %s: error %v does not name the file", file, err)
		}
	}
	// A primary item in a coding without a decoder here (JPEG in HEIF).
	other := bytes.Replace(readHEIFTestdata(t, "yuv420.heic"), []byte("grid\x00"), []byte("jpeg\x00"), 1)
	if _, err := p.Bytes(other, "jpeg.heic"); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"jpeg"`) {
		t.Errorf("JPEG-coded HEIF: error %v, want ErrUnsupported naming the coding", err)
	}
	// The header lies (ispe 1x1 for a 67x45 picture): the header check
	// passes a 100-pixel limit, the decoded size must not.
	bomb := heifSetISPE(readHEIFTestdata(t, "yuv420.heic"), 1, 1)
	if _, err := New(DefaultConfig(), Options{MaxPixels: 100}).Bytes(bomb, "bomb.heic"); err == nil {
		t.Error("a 67x45 picture announced as 1x1 passed a 100-pixel limit")
	}
}

// TestHEIFWASMEmbedded checks the go:linkname to the pinned packages'
// embedded decoders (an upgrade that renames them fails here).
func TestHEIFWASMEmbedded(t *testing.T) {
	for name, gz := range map[string][]byte{"heic": heifWASMgz, "avif": avifWASMgz} {
		if len(gz) < 100<<10 || gz[0] != 0x1f || gz[1] != 0x8b {
			t.Errorf("%s: embedded decoder is %d bytes, not gzip", name, len(gz))
		}
	}
}

// FuzzISOBMFF feeds arbitrary bytes to the HEIF header reader, the
// header check and the rewrite of heifPlanesFile: errors only, bounded
// work.
func FuzzISOBMFF(f *testing.F) {
	for _, name := range []string{"yuv420.heic", "yuv444.avif", "exif6.heic"} {
		b, err := os.ReadFile(filepath.Join("testdata", "heif", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 1024)])
	}
	f.Add([]byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := heifHeader(data)
		if err == nil && (info.w <= 0 || info.h <= 0) {
			t.Fatalf("accepted a %dx%d image", info.w, info.h)
		}
		if err == nil && (info.orient < 1 || info.orient > 8) {
			t.Fatalf("orientation %d", info.orient)
		}
		if err == nil {
			if file, ok := heifPlanesFile(data, info); ok && len(file) < len(data) {
				t.Fatalf("rewritten file of %d bytes from %d", len(file), len(data))
			}
		}
	})
}

// FuzzHEIFDecode runs whole HEIC/AVIF files, mutated, through the embedded
// decoders: a trap or failure inside them must come back as an error that
// names the file, never a crash.
func FuzzHEIFDecode(f *testing.F) {
	for _, name := range []string{"yuv420.heic", "yuv420.avif"} {
		f.Add(readHEIFTestdata(f, name))
	}
	p := New(DefaultConfig(), Options{MaxPixels: 1 << 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := p.Bytes(data, "fuzz.heic")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.heic") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(out) != 3*224*224 {
			t.Fatalf("%d values", len(out))
		}
	})
}

// TestHEIFTrapIsError: a WebAssembly trap inside a decoder (here an
// out-of-bounds read forced by a bad pointer) comes back as an error, and
// the module keeps working for the next file.
func TestHEIFTrapIsError(t *testing.T) {
	for name, m := range map[string]*wasmModule{"libheif": heifModule, "libavif": avifModule} {
		c, err := newWASMCall(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		args := make([]uint64, len(c.entry.Definition().ParamTypes()))
		args[0], args[1] = 0xfffffff0, 4096 // input pointer past the end of memory
		_, err = c.entry.Call(c.ctx, args...)
		c.close()
		if err == nil {
			t.Fatalf("%s: no error from a trapping call", name)
		}
		err = wasmTrap(name, err)
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "out of bounds") {
			t.Errorf("%s: error %q, want one line saying out of bounds", name, err)
		}
	}
	if _, w, h := heifDecodedRGB(t, readHEIFTestdata(t, "yuv420.heic"), "after.heic"); w != 67 || h != 45 {
		t.Errorf("decode after a trap gave %dx%d", w, h)
	}
}

// TestHEIFConcurrent decodes from several goroutines at once, as indexing
// does: each decode has its own WebAssembly instance; results must agree.
func TestHEIFConcurrent(t *testing.T) {
	p := New(DefaultConfig(), Options{})
	for _, name := range []string{"yuv420.heic", "yuv444.avif"} {
		data := readHEIFTestdata(t, name)
		want, err := p.Bytes(data, name)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				got, err := p.Bytes(data, name)
				if err == nil && !slices.Equal(got, want) {
					err = errors.New("different result")
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// TestHEIFPixelLimitOverflow: ispe sizes of 0xC0000000 and more, whose
// product overflows an int64, are refused as too large from the header,
// not handed to a decoder that fails on them.
func TestHEIFPixelLimitOverflow(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("an int of 32 bits cannot hold these sizes: parseHEIF reads them as no size")
	}
	p := New(DefaultConfig(), Options{})
	for _, file := range []string{"yuv420.avif", "yuv420.heic"} {
		for _, side := range []uint32{0xC0000000, 0xFFFFFFFF} {
			data := heifSetISPE(readHEIFTestdata(t, file), side, side)
			_, err := p.Bytes(data, file)
			dims := fmt.Sprintf("%dx%d", side, side)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), dims) || strings.Contains(err.Error(), " -") {
				t.Errorf("%s with ispe %s: error %v, want ErrTooLarge naming %s with a positive size", file, dims, err, dims)
			}
		}
	}
}

// fakeGridTiles returns n tiles for buildGrid whose hvcC and coded data
// are placeholders: enough for the header checks, not for a decoder.
func fakeGridTiles(n int) [][2][]byte {
	tiles := make([][2][]byte, n)
	for i := range tiles {
		tiles[i] = [2][]byte{bmffBox("hvcC", make([]byte, 23)), bytes.Repeat([]byte{byte(i + 1)}, 100)}
	}
	return tiles
}

// TestHEIFGridCoverOverflow: grid tiles whose total area overflows an
// int64 (four of 0x7fffffff squared for a 1x1 image) are refused, as
// tiles covering far more than the image are, while tiles that overhang
// the image by less than a tile still pass.
func TestHEIFGridCoverOverflow(t *testing.T) {
	for _, tc := range []struct {
		tw, th, outW, outH uint32 // an int of 32 bits holds the small cases only
		ok                 bool
	}{
		{64, 64, 120, 100, true},
		{64, 64, 65, 65, true},
		{64, 64, 63, 63, false}, // the right and bottom tiles lie wholly outside
		{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, true},
		{0x7fffffff, 0x7fffffff, 1, 1, false},
		{0xffffffff, 0xffffffff, 1, 1, false},
	} {
		if int(tc.tw) < 0 || int(tc.th) < 0 || int(tc.outW) < 0 || int(tc.outH) < 0 {
			continue
		}
		_, err := heifHeader(buildGrid(fakeGridTiles(4), 2, 2, int(tc.tw), int(tc.th), int(tc.outW), int(tc.outH)))
		if tc.ok && err != nil || !tc.ok && (!errors.Is(err, errBox) || !strings.Contains(err.Error(), "grid tiles")) {
			t.Errorf("2x2 grid of %dx%d tiles for %dx%d: %v, want ok %v", tc.tw, tc.th, tc.outW, tc.outH, err, tc.ok)
		}
	}
}

// TestHEIFTruncated: a HEIC or AVIF cut short inside the data of its
// primary image (for the HEICs, one-tile grids: inside the tile) is refused
// as truncated from its header, before any decoder runs. libavif alone
// decodes such an AVIF as if it were whole.
func TestHEIFTruncated(t *testing.T) {
	p := New(DefaultConfig(), Options{})
	for _, file := range []string{"yuv420.avif", "yuv444.avif", "yuv420_10bit.avif", "yuv420.heic", "yuv444.heic"} {
		orig := readHEIFTestdata(t, file)
		if _, err := p.Bytes(orig, file); err != nil {
			t.Fatalf("%s whole: %v", file, err)
		}
		for _, cut := range []int{1, 50, 200} {
			_, err := p.Bytes(orig[:len(orig)-cut], file)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "file is truncated") {
				t.Errorf("%s cut by %d bytes: error %v, want ErrCorrupt naming the file and saying it is truncated", file, cut, err)
			}
		}
	}
	// Each tile of a grid is checked, and an item in idat against idat.
	grid := buildGrid(fakeGridTiles(4), 2, 2, 64, 64, 120, 100)
	if _, err := heifHeader(grid); err != nil {
		t.Fatalf("whole grid: %v", err)
	}
	if _, err := heifHeader(grid[:len(grid)-1]); !errors.Is(err, errHEIFTruncated) || !strings.Contains(err.Error(), "item 4") {
		t.Errorf("grid cut in its last tile: %v, want errHEIFTruncated naming item 4", err)
	}
	// The grid item (5): construction method 1, one extent of 8 bytes at 0.
	desc := []byte{0, 5, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 8}
	if bytes.Count(grid, desc) != 1 {
		t.Fatal("grid item's iloc entry not found")
	}
	long := bytes.Replace(grid, desc, append(desc[:len(desc)-1:len(desc)-1], 9), 1)
	if _, err := heifHeader(long); !errors.Is(err, errBox) || !strings.Contains(err.Error(), "idat") {
		t.Errorf("grid item past the end of idat: %v, want an errBox naming idat", err)
	}
}

// TestDecodeReducedPixelLimitOverflow: DecodeReduced (serve's thumbnails)
// refuses a HEIF whose size box claims more pixels than an int64 product
// of its sides can hold, as the decode for the model does.
func TestDecodeReducedPixelLimitOverflow(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("an int of 32 bits cannot hold these sizes: parseHEIF reads them as no size")
	}
	for _, file := range []string{"yuv420.avif", "yuv420.heic"} {
		for _, side := range []uint32{0xC0000000, 0xFFFFFFFF} {
			data := heifSetISPE(readHEIFTestdata(t, file), side, side)
			_, err := DecodeReduced(context.Background(), data, file, 256)
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("DecodeReduced of %s with ispe %dx%d: %v, want ErrTooLarge", file, side, side, err)
			}
		}
	}
}
