package preprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// djpegNeed returns the path of libjpeg-turbo's djpeg: the test skips
// without it, except under CI=true, where it fails.
func djpegNeed(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("djpeg")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("djpeg not found (Debian: apt-get install libjpeg-turbo-progs)")
		}
		t.Skip("djpeg not found (Debian: apt-get install libjpeg-turbo-progs)")
	}
	return p
}

// djpegScaled decodes data with djpeg -scale 1/n into packed RGB (grey
// expanded to three channels); ok is false when djpeg cannot write it as
// PNM (CMYK) or fails.
func djpegScaled(t testing.TB, tool string, data []byte, n int, env ...string) (rgb []byte, w, h int, ok bool) {
	t.Helper()
	cmd := exec.Command(tool, "-scale", fmt.Sprintf("1/%d", n), "-pnm")
	cmd.Stdin = bytes.NewReader(data)
	cmd.Env = append(os.Environ(), env...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 { // 2: warnings, image written
			return nil, 0, 0, false
		}
	}
	pix, w, h, ch, err := parsePNM(out.Bytes())
	if err != nil {
		t.Fatalf("djpeg output: %v (%s)", err, stderr.String())
	}
	if ch == 3 {
		return pix, w, h, true
	}
	rgb = make([]byte, 0, 3*len(pix))
	for _, v := range pix {
		rgb = append(rgb, v, v, v)
	}
	return rgb, w, h, true
}

// parsePNM reads a binary 8-bit PPM (P6) or PGM (P5).
func parsePNM(b []byte) (pix []byte, w, h, channels int, err error) {
	var fields []int
	magic := string(b[:min(len(b), 2)])
	if magic != "P6" && magic != "P5" {
		return nil, 0, 0, 0, fmt.Errorf("not a binary PNM: %q", b[:min(len(b), 8)])
	}
	i := 2
	for len(fields) < 3 {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
			i++
		}
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		v, err := strconv.Atoi(string(b[i:j]))
		if err != nil {
			return nil, 0, 0, 0, fmt.Errorf("PNM header: %v", err)
		}
		fields = append(fields, v)
		i = j
	}
	i++ // the single whitespace after maxval
	w, h, channels = fields[0], fields[1], 1
	if magic == "P6" {
		channels = 3
	}
	if fields[2] != 255 || len(b)-i != w*h*channels {
		return nil, 0, 0, 0, fmt.Errorf("PNM %dx%d maxval %d with %d bytes", w, h, fields[2], len(b)-i)
	}
	return b[i:], w, h, channels, nil
}

// jpegScaledRGB decodes data at scale 1/n through the reduced decoder,
// asking for the minSide that selects 1/n; ok is false when none does (an
// image so small that 1/n and 1/2n give the same size).
func jpegScaledRGB(t testing.TB, data []byte, name string, n int) (rgb []byte, w, h int, ok bool, err error) {
	t.Helper()
	fw, fh, err := jpegDims(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	minSide := ceilDiv(max(fw, fh), n)
	if jpegScaleFor(fw, fh, minSide) != n {
		return nil, 0, 0, false, nil
	}
	img, err := decodeJPEGReduced(context.Background(), data, name, DefaultMaxPixels, minSide)
	if err != nil {
		return nil, 0, 0, true, err
	}
	rgb, w, h = toRGB(nil, img, yccJFIF)
	return rgb, w, h, true, nil
}

// jpegDims reads the frame size of a JPEG through the decoder's header
// parsing (a decode that the pixel limit stops at the frame header).
func jpegDims(data []byte) (int, int, error) {
	_, err := safely(func() (any, error) {
		d := &jpegDecoder{data: data, maxPixels: 0}
		return d.decode()
	})
	var big errJPEGTooLarge
	if errors.As(err, &big) {
		return big.w, big.h, nil
	}
	return 0, 0, fmt.Errorf("no frame size: %v", err)
}

// jpegScaleFiles are the corpus files the scaled decoder is checked on:
// every sampling layout, progressive and arithmetic coding, restart
// markers, early-ended progressions (block smoothing), damaged files,
// grey, RGB, odd and tiny sizes.
func jpegScaleFiles(t testing.TB) []string {
	t.Helper()
	a, _ := filepath.Glob(filepath.Join("testdata", "jpeg", "*.jpg"))
	b, _ := filepath.Glob(filepath.Join("testdata", "images", "*.jpg"))
	if len(a) < 90 || len(b) < 10 {
		t.Fatalf("found %d + %d test JPEGs", len(a), len(b))
	}
	return append(a, b...)
}

// jpegScaleMustCompare are corpus files that must be compared at all
// three scales: 4:4:4, 4:2:0, 4:2:2, 4:4:0 and 4:1:1, progressive (with
// block smoothing of a progression that stops early), grey, arithmetic
// coding, restart markers, and odd sizes.
var jpegScaleMustCompare = []string{
	"pil_444_q85_333x211.jpg", "pil_420_q85_333x211.jpg", "pil_422_q85_333x211.jpg",
	"cjpeg_440_q85_333x211.jpg", "cjpeg_411_prog_333x211.jpg", "pil_prog_420_333x211.jpg",
	"jpegtran_partial_333x211.jpg", "pil_grey_333x211.jpg", "cjpeg_arithmetic_over64k_333x211.jpg",
	"cjpeg_restart1_420_333x211.jpg", "pil_420_q50_17x9.jpg", "pil_422_q75_9x17.jpg", "pil_444_q90_17x9.jpg",
}

// TestJPEGScaledMatchesDjpeg decodes every corpus JPEG at 1/2, 1/4 and 1/8
// and requires libjpeg-turbo's djpeg -scale output byte for byte, with its
// SIMD code and without (JSIMD_FORCENONE). CMYK files, which djpeg cannot
// write as PNM, files the full-size decoder refuses as Pillow does, and
// scales no minSide selects (tiny images) are not compared; at least 80
// files must be, and jpegScaleMustCompare at every scale.
func TestJPEGScaledMatchesDjpeg(t *testing.T) {
	tool := djpegNeed(t)
	compared, pairs := 0, map[string]int{}
	for _, path := range jpegScaleFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		if _, _, err := decodeImage(data, name, DefaultMaxPixels); err != nil {
			continue // refused at full size too (truncated, 12-bit, ...)
		}
		fileCompared := false
		for _, n := range []int{2, 4, 8} {
			got, gw, gh, ok, err := jpegScaledRGB(t, data, name, n)
			if !ok {
				continue
			}
			for _, env := range []string{"", "JSIMD_FORCENONE=1"} {
				want, ww, wh, ok := djpegScaled(t, tool, data, n, env)
				if !ok {
					continue
				}
				if err != nil {
					t.Errorf("%s at 1/%d: %v", name, n, err)
					continue
				}
				if gw != ww || gh != wh {
					t.Errorf("%s at 1/%d %s: %dx%d, djpeg %dx%d", name, n, env, gw, gh, ww, wh)
					continue
				}
				if nd, maxd := heifRGBDiff(got, want); nd != 0 {
					t.Errorf("%s at 1/%d %s: %d of %d samples differ from djpeg's, by up to %d", name, n, env, nd, len(got), maxd)
				}
				fileCompared = true
				pairs[name]++
			}
		}
		if fileCompared {
			compared++
		}
	}
	n := 0
	for _, v := range pairs {
		n += v
	}
	t.Logf("%d files, %d (file, scale, SIMD or not) decodes compared", compared, n)
	if compared < 80 {
		t.Errorf("only %d files compared with djpeg", compared)
	}
	for _, name := range jpegScaleMustCompare {
		if pairs[name] != 6 {
			t.Errorf("%s compared %d times, want 3 scales x 2", name, pairs[name])
		}
	}
}

// FuzzJPEGScaled feeds arbitrary bytes and sizes to the reduced decoder
// itself (not through safely, which would hide a panic): it must return an
// error or an image of ceil(w/N) x ceil(h/N) for the scale chosen.
func FuzzJPEGScaled(f *testing.F) {
	for _, name := range []string{"pil_420_q50_17x9.jpg", "pil_prog_444_17x9.jpg", "cjpeg_restart1b_prog_411_97x35.jpg",
		"jpegtran_partial_16x9.jpg", "pil_grey_prog_31x7.jpg", "ycck_adobe2.jpg", "bad_rst_sequence.jpg",
		"cjpeg_arithmetic_97x35.jpg", "jpegtran_arithmetic_partial_97x35.jpg", "cjpeg_1x4_q85_333x211.jpg"} {
		b, err := os.ReadFile(filepath.Join("testdata", "jpeg", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(4))
		f.Add(b[:len(b)*3/4], uint16(1))
	}
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte, minSide uint16) {
		d := &jpegDecoder{data: data, maxPixels: limit, minSide: int(minSide) + 1, ctx: context.Background()}
		img, err := d.decode()
		if err != nil {
			if img != nil {
				t.Fatal("an image and an error")
			}
			return
		}
		m := img.(*packedRGB)
		if m.W != ceilDiv(d.w, d.scale) || m.H != ceilDiv(d.h, d.scale) || len(m.Pix) != m.W*m.H*3 {
			t.Fatalf("%dx%d image at 1/%d of %dx%d, %d bytes", m.W, m.H, d.scale, d.w, d.h, len(m.Pix))
		}
	})
}
