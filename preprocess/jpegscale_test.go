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

// TestJPEGScaledMatchesDjpeg decodes every corpus JPEG at 1/2, 1/4 and 1/8
// and requires libjpeg-turbo's djpeg -scale output byte for byte, with its
// SIMD code and without (JSIMD_FORCENONE). CMYK files, which djpeg cannot
// write as PNM, and files the full-size decoder refuses as Pillow does are
// not compared; at least 80 files must be.
func TestJPEGScaledMatchesDjpeg(t *testing.T) {
	tool := djpegNeed(t)
	compared := 0
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
			}
		}
		if fileCompared {
			compared++
		}
	}
	t.Logf("%d files compared at three scales", compared)
	if compared < 80 {
		t.Errorf("only %d files compared with djpeg", compared)
	}
}
