package preprocess

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// needFFmpeg returns the ffmpeg on PATH; without one the test is skipped,
// or fails under CI=true (where .ci/run installs it).
func needFFmpeg(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ffmpeg not found (Debian: apt-get install ffmpeg)")
		}
		t.Skip("ffmpeg not found (Debian: apt-get install ffmpeg)")
	}
	return p
}

// withFFmpeg runs fn with HEVC decoded by ffmpeg at path ("" for the
// built-in decoder), and returns how many HEICs ffmpeg decoded meanwhile.
func withFFmpeg(t testing.TB, path string, fn func()) int64 {
	t.Helper()
	if path == "" {
		UseFFmpeg(nil)
	} else {
		UseFFmpeg(func() string { return path })
	}
	defer UseFFmpeg(nil)
	n := hevcFFmpegDecodes.Load()
	fn()
	return hevcFFmpegDecodes.Load() - n
}

// heifFFmpegCases are HEICs that ffmpeg must decode: the test files (a
// one-tile grid at an odd size, 4:2:2, 4:4:4, 10 bits, EXIF orientation),
// the same with colour descriptions and transformations added, and a 2x2
// grid cropped on two sides.
func heifFFmpegCases(t *testing.T) map[string][]byte {
	cases := map[string][]byte{}
	for _, f := range []string{"yuv420.heic", "yuv422.heic", "yuv444.heic", "yuv420_10bit.heic", "exif6.heic"} {
		cases[f] = readHEIFTestdata(t, f)
	}
	y420, y10 := cases["yuv420.heic"], cases["yuv420_10bit.heic"]
	cases["bt709-limited"] = heifAddProps(t, y420, true, nclxBox(1, 13, 1, false))
	cases["p3-chroma-derived"] = heifAddProps(t, y420, true, nclxBox(12, 13, 12, true))
	cases["10bit-bt2020-limited"] = heifAddProps(t, y10, true, nclxBox(9, 16, 9, false))
	cases["10bit-gbr"] = heifAddProps(t, y10, true, nclxBox(1, 13, 0, true))
	cases["irot1+imir0"] = heifAddProps(t, y420, false, irotBox(1), imirBox(0))
	cases["yuv444-irot3"] = heifAddProps(t, cases["yuv444.heic"], false, irotBox(3))
	tiles, _ := heifGridTiles(t, 2, 2)
	cases["grid2x2"] = buildGrid(tiles, 2, 2, 64, 64, 120, 100)
	// An auxiliary image that is not alpha (a depth map here; an iPhone's
	// HDR gain map alike) is not part of the primary image's pixels.
	depth := bytes.Replace(heifWithAlpha(t), []byte(alphaURN), []byte("urn:mpeg:hevc:2015:auxid:2"), 1)
	if bytes.Contains(depth, []byte(alphaURN)) {
		t.Fatal("alpha URN not replaced")
	}
	cases["depth-aux"] = depth
	return cases
}

const alphaURN = "urn:mpeg:hevc:2015:auxid:1"

// heifWithAlpha is a 64x48 HEIC with an alpha plane, made by heif-enc from
// an RGBA PNG.
func heifWithAlpha(t testing.TB) []byte {
	t.Helper()
	enc := heifNeedTool(t, "heif-enc")
	dir := t.TempDir()
	img := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7 / 3)
	}
	src, out := filepath.Join(dir, "a.png"), filepath.Join(dir, "a.heic")
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(enc, "-q", "80", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(alphaURN)) {
		t.Fatal("heif-enc wrote no alpha plane")
	}
	return data
}

// TestHEIFFFmpegSamePixels decodes every case with libheif (WebAssembly)
// and with ffmpeg: the same bytes, and ffmpeg's path taken for each.
func TestHEIFFFmpegSamePixels(t *testing.T) {
	ff := needFFmpeg(t)
	for name, data := range heifFFmpegCases(t) {
		t.Run(name, func(t *testing.T) {
			var want, got []byte
			var w, h, gw, gh int
			if n := withFFmpeg(t, "", func() { want, w, h = heifDecodedRGB(t, data, name) }); n != 0 {
				t.Fatalf("built-in decode went through ffmpeg %d times", n)
			}
			if n := withFFmpeg(t, ff, func() { got, gw, gh = heifDecodedRGB(t, data, name) }); n != 1 {
				t.Fatalf("ffmpeg decoded %d times, want 1 (the file went to libheif)", n)
			}
			if gw != w || gh != h {
				t.Fatalf("ffmpeg: %dx%d, libheif: %dx%d", gw, gh, w, h)
			}
			if n, maxd := heifRGBDiff(got, want); n != 0 {
				t.Errorf("%d of %d samples differ from libheif's, by up to %d", n, len(got), maxd)
			}
			// The whole pipeline too: the model's input is the same.
			var a, b []float32
			var err1, err2 error
			withFFmpeg(t, "", func() { a, err1 = New(DefaultConfig(), Options{}).Bytes(data, name) })
			withFFmpeg(t, ff, func() { b, err2 = New(DefaultConfig(), Options{}).Bytes(data, name) })
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("tensor differs at %d: %v against %v", i, b[i], a[i])
				}
			}
		})
	}
}

// TestHEIFFFmpegDeclines: what ffmpeg's path cannot vouch for goes to
// libheif, whose result (pixels or error) is then the answer: a clean
// aperture, an alpha plane, an ispe that disagrees with the coded picture, a file cut
// short, and an ffmpeg that fails or is missing. Coded data scrambled in
// place is decoded by both without a word (HEVC has no checksum unless the
// encoder adds one, and Apple's do not): the garbage differs, and that is
// the one case where the decoder shows.
func TestHEIFFFmpegDeclines(t *testing.T) {
	ff := needFFmpeg(t)
	y444 := readHEIFTestdata(t, "yuv444.heic")
	info, err := parseHEIF(y444)
	if err != nil {
		t.Fatal(err)
	}
	// clap: width and height 3/4 of the picture, centred.
	clap := make([]byte, 32)
	for i, v := range []uint32{uint32(info.w / 4 * 3), 1, uint32(info.h / 4 * 3), 1, 0, 1, 0, 1} {
		binary.BigEndian.PutUint32(clap[4*i:], v)
	}
	// The middle of the coded data (mdat) scrambled.
	damaged := bytes.Clone(y444)
	var mdat []byte
	for _, b := range bmffSplit(t, damaged) {
		if b.typ == "mdat" {
			mdat = b.body
		}
	}
	if len(mdat) < 64 {
		t.Fatalf("mdat of %d bytes", len(mdat))
	}
	for i := len(mdat) / 3; i < len(mdat)/2; i++ {
		mdat[i] ^= 0x5a
	}
	cases := []struct {
		name string
		data []byte
		tool string
	}{
		{"clap", heifAddProps(t, y444, false, bmffBox("clap", clap)), ff},
		{"alpha", heifWithAlpha(t), ff},
		{"cut-short", y444[:len(y444)-len(mdat)/2], ff},
		{"ispe", heifSetISPE(y444, uint32(info.w+2), uint32(info.h)), ff},
		{"ffmpeg-fails", y444, "/bin/false"},
		{"no-ffmpeg", y444, filepath.Join(t.TempDir(), "ffmpeg")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err1 := New(DefaultConfig(), Options{}).Bytes(c.data, c.name+".heic")
			var got []float32
			var err2 error
			n := withFFmpeg(t, c.tool, func() { got, err2 = New(DefaultConfig(), Options{}).Bytes(c.data, c.name+".heic") })
			if n != 0 {
				t.Errorf("ffmpeg's decode was used")
			}
			if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
				t.Fatalf("with ffmpeg: %v; without: %v", err2, err1)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("tensor differs at %d", i)
				}
			}
			t.Logf("libheif: %v", err1)
		})
	}
	t.Run("scrambled", func(t *testing.T) {
		want, err1 := New(DefaultConfig(), Options{}).Bytes(damaged, "scrambled.heic")
		var got []float32
		var err2 error
		withFFmpeg(t, ff, func() { got, err2 = New(DefaultConfig(), Options{}).Bytes(damaged, "scrambled.heic") })
		if err1 != nil || err2 != nil {
			t.Fatalf("with ffmpeg: %v; without: %v (both decoders are expected to get through)", err2, err1)
		}
		n := 0
		for i := range want {
			if got[i] != want[i] {
				n++
			}
		}
		t.Logf("%d of %d tensor values differ", n, len(want))
	})
}

// TestHEIFFFmpegThumbnail: DecodeReduced decodes a HEIC's thumbnail item
// (serve's small pictures) through ffmpeg to libheif's pixels.
func TestHEIFFFmpegThumbnail(t *testing.T) {
	ff := needFFmpeg(t)
	enc := heifNeedTool(t, "heif-enc")
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 320, 240)) // opaque: an alpha plane would go to libheif
	for i := range img.Pix {
		img.Pix[i] = byte(i*13/7) | 3
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	src, out := filepath.Join(dir, "a.png"), filepath.Join(dir, "a.heic")
	if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(enc, "-q", "80", "-t", "96", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var want, got *image.RGBA
	var err1, err2 error
	withFFmpeg(t, "", func() { want, err1 = DecodeReduced(ctx, data, "a.heic", 64) })
	n := withFFmpeg(t, ff, func() { got, err2 = DecodeReduced(ctx, data, "a.heic", 64) })
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if b := want.Bounds(); b.Dx() != 96 {
		t.Fatalf("decoded %v, want the 96-pixel thumbnail", b)
	}
	if n != 1 || !bytes.Equal(got.Pix, want.Pix) || got.Bounds() != want.Bounds() {
		t.Errorf("ffmpeg decodes %d; %v against %v, same pixels %v", n, got.Bounds(), want.Bounds(), bytes.Equal(got.Pix, want.Pix))
	}
}

// heifWindowConfig is a preprocessing configuration the window tests run.
type heifWindowConfig struct {
	name string
	c    Config
}

// heifWindowCases are grids of 16 tiles of 64x64, wide and tall, turned,
// mirrored or with an nclx, and the configurations to read them with: the
// model's (224, which enlarges these small grids) and 32.
func heifWindowCases(t *testing.T) (map[string][]byte, []heifWindowConfig) {
	wide, _ := heifGridTiles(t, 8, 2)
	var tall [][2][]byte
	for c := 0; c < 8; c++ { // the same tiles, as 2 columns of 8 rows
		tall = append(tall, wide[c], wide[8+c])
	}
	wideGrid := func() []byte { return buildGrid(wide, 2, 8, 64, 64, 500, 120) }
	tallGrid := func() []byte { return buildGrid(tall, 8, 2, 64, 64, 120, 500) }
	small := DefaultConfig()
	small.ShortestEdge, small.CropWidth, small.CropHeight = 32, 32, 32
	return map[string][]byte{
		"wide":       wideGrid(),
		"tall":       tallGrid(),
		"wide-irot1": heifAddProps(t, wideGrid(), false, irotBox(1)),
		"wide-imir0": heifAddProps(t, wideGrid(), false, imirBox(0)),
		"tall-irot3": heifAddProps(t, tallGrid(), false, irotBox(3)),
		"tall-imir1": heifAddProps(t, tallGrid(), false, imirBox(1)),
		"wide-bt709": heifAddProps(t, wideGrid(), true, nclxBox(1, 13, 1, false)),
	}, []heifWindowConfig{{"224", DefaultConfig()}, {"32", small}}
}

// heifWholeInput is p's model input for a HEIC decoded whole, with no
// window (orientation 1: a HEIC's EXIF orientation is never applied).
func heifWholeInput(t *testing.T, p *Processor, data []byte, name string) ([]float32, error) {
	t.Helper()
	img, f, err := decodeImage(data, name, DefaultMaxPixels)
	if err != nil {
		t.Fatal(err)
	}
	return p.run(img, yccFor(f), 1)
}

// TestHEIFFFmpegWindow: for the model's input, ffmpeg decodes only the
// grid tiles the resize and crop read, and the input is the one the whole
// image gives: wide and tall grids, turned by irot or not, at the model's
// size (224, which enlarges these small grids) and at 32.
func TestHEIFFFmpegWindow(t *testing.T) {
	ff := needFFmpeg(t)
	files, configs := heifWindowCases(t)
	for name, data := range files {
		for _, cfg := range configs {
			t.Run(name+"/"+cfg.name, func(t *testing.T) {
				p := New(cfg.c, Options{})
				var want, got []float32
				var err1, err2 error
				withFFmpeg(t, "", func() { want, err1 = heifWholeInput(t, p, data, name) })
				skipped := hevcTilesSkipped.Load()
				n := withFFmpeg(t, ff, func() { got, err2 = p.Bytes(data, name) })
				skipped = hevcTilesSkipped.Load() - skipped
				if err1 != nil || err2 != nil || n != 1 {
					t.Fatalf("%v, %v; ffmpeg decodes %d", err1, err2, n)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("the model's input differs from the whole image's")
				}
				t.Logf("%d of 16 tiles not decoded", skipped)
				if cfg.name == "32" && skipped < 4 {
					t.Errorf("%d tiles skipped; the crop reads half the picture", skipped)
				}
			})
		}
	}
}

// TestUnorientRect: a rectangle shown in each orientation maps back to
// the stored pixels it shows.
func TestUnorientRect(t *testing.T) {
	const w, h = 7, 5
	src := make([]byte, w*h*3)
	for i := range w * h {
		src[i*3] = byte(i)
	}
	for o := 1; o <= 8; o++ {
		ow, oh := orientDims(w, h, o)
		shown := make([]byte, len(src))
		orient(shown, src, w, h, o)
		r := image.Rect(1, 2, ow-1, oh-1)
		got := unorientRect(r, w, h, o)
		want := image.Rectangle{}
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				i := int(shown[(y*ow+x)*3])
				want = want.Union(image.Rect(i%w, i/w, i%w+1, i/w+1))
			}
		}
		if got != want {
			t.Errorf("orientation %d: %v maps to %v, want %v", o, r, got, want)
		}
	}
}

// TestHEIFFFmpegStops: a cancelled context stops the ffmpeg decode with
// the context's error.
func TestHEIFFFmpegStops(t *testing.T) {
	ff := needFFmpeg(t)
	data := readHEIFTestdata(t, "yuv444.heic")
	job, ok := hevcPlan(data)
	if !ok {
		t.Fatal("yuv444.heic: no plan")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ffmpegHEIF(ctx, ff, job, nclx{matrix: 6, fullRange: true}, 8); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled decode: %v, want context.Canceled", err)
	}
}

// FuzzHEVCPlan: hostile headers never panic the planning of an ffmpeg
// decode nor the making of a smaller grid for libheif, and a plan's frames and output stay within the sizes its ispe
// properties (checked against the pixel limit before) announce.
func FuzzHEVCPlan(f *testing.F) {
	for _, name := range []string{"yuv420.heic", "yuv444.heic", "yuv420_10bit.heic"} {
		f.Add(readHEIFTestdata(f, name))
	}
	wide, _ := heifGridTiles(f, 8, 2)
	f.Add(buildGrid(wide, 2, 8, 64, 64, 500, 120))
	f.Fuzz(func(t *testing.T, data []byte) {
		if info, err := heifHeader(data); err == nil {
			if d, at, ok := heifSubGridFile(data, info, image.Rect(1, 1, 70, 40)); ok && (len(d) != len(data) || at.X < 0 || at.Y < 0) {
				t.Fatalf("smaller grid of %d bytes for %d, at %v", len(d), len(data), at)
			}
		}
		job, ok := hevcPlan(data)
		if !ok {
			return
		}
		info, err := heifHeader(data)
		if err != nil {
			return // heifDecodeItem is never reached
		}
		p := job.pic
		if p.w <= 0 || p.h <= 0 || job.outW > job.cols*p.w || job.outH > job.rows*p.h || job.outW <= 0 || job.outH <= 0 {
			t.Fatalf("plan %+v", job)
		}
		if info.itemType != "grid" && (job.rows != 1 || job.cols != 1) {
			t.Fatalf("plan %+v for a primary %q", job, info.itemType)
		}
		if job.outW != info.w || job.outH != info.h {
			t.Fatalf("plan of %dx%d for an ispe of %dx%d", job.outW, job.outH, info.w, info.h)
		}
	})
}

// TestCheckFFmpeg: the self-check passes with the real ffmpeg, fails with
// one that exits with an error or one that writes other pixels, and a
// HEIC given to a failing ffmpeg is counted and decoded by libheif.
func TestCheckFFmpeg(t *testing.T) {
	ff := needFFmpeg(t)
	ctx := context.Background()
	withFFmpeg(t, ff, func() {
		if p, err := CheckFFmpeg(ctx); p != ff || err != nil {
			t.Errorf("real ffmpeg: %q, %v", p, err)
		}
	})
	withFFmpeg(t, "", func() {
		if p, err := CheckFFmpeg(ctx); p != "" || err != nil {
			t.Errorf("no ffmpeg: %q, %v", p, err)
		}
	})
	if runtime.GOOS == "windows" {
		return
	}
	// An ffmpeg that brightens every sample by one (a filter the real
	// one applies on the way out).
	dir := t.TempDir()
	bright := filepath.Join(dir, "ffmpeg")
	script := "#!/bin/sh\nexec '" + ff + "' \"$@\" 2>/dev/null | '" + ff + "' -loglevel error -f yuv4mpegpipe -i - -vf lutyuv=y=val+1 -f yuv4mpegpipe -strict -1 -\n"
	if err := os.WriteFile(bright, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	withFFmpeg(t, bright, func() {
		if _, err := CheckFFmpeg(ctx); err == nil || !strings.Contains(err.Error(), "differ") {
			t.Errorf("an ffmpeg with other pixels: %v", err)
		}
	})
	n0, _ := FFmpegFailures()
	data := readHEIFTestdata(t, "yuv444.heic")
	want, err1 := New(DefaultConfig(), Options{}).Bytes(data, "a.heic")
	var got []float32
	var err2 error
	withFFmpeg(t, "/bin/false", func() {
		if _, err := CheckFFmpeg(ctx); !errors.Is(err, errFFmpegHEVC) {
			t.Errorf("/bin/false: %v, want why ffmpeg's decode is not used", err)
		}
		got, err2 = New(DefaultConfig(), Options{}).Bytes(data, "a.heic")
	})
	if err1 != nil || err2 != nil || !slices.Equal(got, want) {
		t.Fatalf("through a failing ffmpeg: %v, %v, equal %v", err1, err2, slices.Equal(got, want))
	}
	if n, last := FFmpegFailures(); n != n0+1 || last == nil {
		t.Errorf("failures %d (before: %d), last %v", n, n0, last)
	}
}

// TestHEIFFFmpegConcurrent: decodes running at once (a build's workers)
// each get their own ffmpeg and the same pixels.
func TestHEIFFFmpegConcurrent(t *testing.T) {
	ff := needFFmpeg(t)
	data := readHEIFTestdata(t, "yuv420_10bit.heic")
	want, _, _ := heifDecodedRGB(t, data, "a.heic")
	var failed atomic.Int64
	n := withFFmpeg(t, ff, func() {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 3 {
					img, _, err := decodeImage(data, "a.heic", DefaultMaxPixels)
					if m, ok := img.(*packedRGB); err != nil || !ok || !bytes.Equal(m.Pix, want) {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
	})
	if failed.Load() != 0 || n != 24 {
		t.Errorf("%d of 24 decodes differ or failed; ffmpeg decoded %d", failed.Load(), n)
	}
}

// TestHEIFFFmpegTimeLimit: an ffmpeg that hangs (here a wrapper whose
// child keeps the pipes open) is stopped at the time limit and the file
// goes to libheif.
func TestHEIFFFmpegTimeLimit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the hanging ffmpeg is a shell script")
	}
	hang := filepath.Join(t.TempDir(), "ffmpeg")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { hevcTimeLimit = d }(hevcTimeLimit)
	hevcTimeLimit = 500 * time.Millisecond
	data := readHEIFTestdata(t, "yuv444.heic")
	want, err1 := New(DefaultConfig(), Options{}).Bytes(data, "a.heic")
	n0, _ := FFmpegFailures()
	var got []float32
	var err2 error
	start := time.Now()
	withFFmpeg(t, hang, func() { got, err2 = New(DefaultConfig(), Options{}).Bytes(data, "a.heic") })
	took := time.Since(start)
	if err1 != nil || err2 != nil || !slices.Equal(got, want) {
		t.Fatalf("%v, %v, same input %v", err1, err2, slices.Equal(got, want))
	}
	n, last := FFmpegFailures()
	if n != n0+1 || last == nil || !strings.Contains(last.Error(), "took over") {
		t.Errorf("failures %d (before %d), last %v", n, n0, last)
	}
	if took > 10*time.Second {
		t.Errorf("took %v with a limit of %v", took, hevcTimeLimit)
	}
}

// TestHEIFBuiltinWindow: without ffmpeg, the model's input of a grid comes
// from libheif decoding a smaller grid of the tiles the crop reads, and is
// the one the whole grid gives.
func TestHEIFBuiltinWindow(t *testing.T) {
	files, configs := heifWindowCases(t)
	for name, data := range files {
		for _, cfg := range configs {
			t.Run(name+"/"+cfg.name, func(t *testing.T) {
				p := New(cfg.c, Options{})
				var want, got []float32
				var err1, err2 error
				n := heifSubGrids.Load()
				withFFmpeg(t, "", func() {
					want, err1 = heifWholeInput(t, p, data, name)
					got, err2 = p.Bytes(data, name)
				})
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if d := heifSubGrids.Load() - n; d != 1 {
					t.Fatalf("%d decodes through a smaller grid, want 1", d)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("the model's input differs from the whole grid's")
				}
			})
		}
	}
}
