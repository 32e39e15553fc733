package preprocess

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// boxShrink averages img down to w x h (each output pixel the mean of the
// source pixels it covers): the reference a reduced decode must be near.
func boxShrink(img *image.RGBA, w, h int) *image.RGBA {
	sw, sh := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := 0; x < w; x++ {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			var sum [3]int
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					p := img.Pix[sy*img.Stride+sx*4:]
					sum[0], sum[1], sum[2] = sum[0]+int(p[0]), sum[1]+int(p[1]), sum[2]+int(p[2])
				}
			}
			n := (y1 - y0) * (x1 - x0)
			d := out.Pix[y*out.Stride+x*4:]
			d[0], d[1], d[2], d[3] = byte((sum[0]+n/2)/n), byte((sum[1]+n/2)/n), byte((sum[2]+n/2)/n), 255
		}
	}
	return out
}

// meanAbsDiff is the mean absolute difference of the RGB samples of two
// images of one size.
func meanAbsDiff(t testing.TB, a, b *image.RGBA) float64 {
	t.Helper()
	if a.Rect.Size() != b.Rect.Size() {
		t.Fatalf("sizes %v and %v", a.Rect.Size(), b.Rect.Size())
	}
	var sum, n int
	for y := 0; y < a.Rect.Dy(); y++ {
		for x := 0; x < a.Rect.Dx(); x++ {
			p, q := a.Pix[y*a.Stride+x*4:], b.Pix[y*b.Stride+x*4:]
			for i := 0; i < 3; i++ {
				sum += absInt(int(p[i]) - int(q[i]))
				n++
			}
		}
	}
	return float64(sum) / float64(n)
}

// encodeJPEG encodes img as a baseline 4:2:0 JPEG (Go's encoder).
func encodeJPEG(t testing.TB, img image.Image, quality int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeReducedJPEGScale: the scale is the largest that keeps minSide
// on the longer side; the reduced image is close to the full decode
// averaged down (an independent check that needs no djpeg), and at full
// size it is Decode's, byte for byte.
func TestDecodeReducedJPEGScale(t *testing.T) {
	const w, h = 1001, 703
	data := encodeJPEG(t, photoLike(w, h), 90)
	full, err := Decode(data, "p.jpg", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ minSide, scale int }{
		{0, 8}, {1, 8}, {126, 8}, {127, 4}, {251, 4}, {252, 2}, {501, 2}, {502, 1}, {5000, 1},
	} {
		got, err := DecodeReduced(context.Background(), data, "p.jpg", tc.minSide)
		if err != nil {
			t.Fatal(err)
		}
		ow, oh := ceilDiv(w, tc.scale), ceilDiv(h, tc.scale)
		if got.Rect.Dx() != ow || got.Rect.Dy() != oh {
			t.Errorf("minSide %d: %v, want 1/%d: %dx%d", tc.minSide, got.Rect.Size(), tc.scale, ow, oh)
			continue
		}
		if tc.scale == 1 {
			if !bytes.Equal(got.Pix, full.Pix) {
				t.Errorf("minSide %d: full-size result differs from Decode", tc.minSide)
			}
			continue
		}
		// The edge pixels of an odd size cover part of a block: compare
		// the whole blocks only.
		d := meanAbsDiff(t, got.SubImage(image.Rect(0, 0, w/tc.scale, h/tc.scale)).(*image.RGBA),
			boxShrink(full.SubImage(image.Rect(0, 0, w/tc.scale*tc.scale, h/tc.scale*tc.scale)).(*image.RGBA), w/tc.scale, h/tc.scale))
		t.Logf("1/%d: mean difference from the full decode averaged down: %.2f levels", tc.scale, d)
		if d > 2.5 {
			t.Errorf("1/%d: mean difference %.2f levels from the full decode averaged down", tc.scale, d)
		}
	}
}

// TestDecodeReducedOrientation: the EXIF orientation is applied to the
// reduced image as Decode applies it to the full one.
func TestDecodeReducedOrientation(t *testing.T) {
	for _, name := range []string{"orient3.jpg", "orient6.jpg", "orient8.jpg"} {
		data := readTestdata(t, name) // stored 120x180
		full, err := Decode(data, name, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeReduced(context.Background(), data, name, 40) // 1/4: 30x45 stored
		if err != nil {
			t.Fatal(err)
		}
		want := boxShrink(full, full.Rect.Dx()/4, full.Rect.Dy()/4)
		if got.Rect.Size() != want.Rect.Size() {
			t.Fatalf("%s: %v, want %v", name, got.Rect.Size(), want.Rect.Size())
		}
		unturned, err := Decode(data, name, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		d := meanAbsDiff(t, got, want)
		t.Logf("%s: %.2f levels from the full decode averaged down", name, d)
		if d > 3 {
			t.Errorf("%s: %.2f levels from the full decode averaged down", name, d)
		}
		if name == "orient3.jpg" { // same size turned or not: the content must tell
			if u := meanAbsDiff(t, got, boxShrink(unturned, want.Rect.Dx(), want.Rect.Dy())); u < 4*d+10 {
				t.Errorf("%s: the unturned image is as close (%.2f levels)", name, u)
			}
		}
	}
}

// TestDecodeReducedAllocations: a 24-megapixel baseline JPEG decoded at
// 1/8 allocates about 1/64 of what the full-size Decode does (planes, RGB
// and RGBA all at the reduced size; the entropy decoding allocates
// nothing per block).
func TestDecodeReducedAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a 24-megapixel JPEG")
	}
	data := encodeJPEG(t, photoLike(6000, 4000), 90)
	runtime.GC()
	var err error
	fullBytes := bytesAllocated(func() { _, err = Decode(data, "24mp.jpg", 0, false) })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ minSide, scale int }{{256, 8}, {1000, 4}, {2000, 2}} {
		runtime.GC()
		var img *image.RGBA
		a := bytesAllocated(func() { img, err = DecodeReduced(context.Background(), data, "24mp.jpg", tc.minSide) })
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(fullBytes) / float64(a)
		t.Logf("1/%d (%v): %.1f MB against %.1f MB at full size: 1/%.1f", tc.scale, img.Rect.Size(),
			float64(a)/1e6, float64(fullBytes)/1e6, ratio)
		want := float64(tc.scale * tc.scale)
		if ratio < want*0.75 {
			t.Errorf("1/%d allocates 1/%.1f of the full decode, want about 1/%.0f", tc.scale, ratio, want)
		}
	}
}

// countdownCtx is a context that reports Canceled from its n-th Err call
// on: a cancellation at a known point of a decode, with no timing.
type countdownCtx struct {
	context.Context
	left atomic.Int64
	done chan struct{}
}

func newCountdownCtx(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background(), done: make(chan struct{})}
	c.left.Store(n)
	return c
}

func (c *countdownCtx) Done() <-chan struct{} { return c.done }
func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestDecodeReducedJPEGCancel: a JPEG decode stops at the MCU row where
// its context is found cancelled, with the context's error and not
// ErrCorrupt; a context cancelled before the call stops it at once.
func TestDecodeReducedJPEGCancel(t *testing.T) {
	base := encodeJPEG(t, photoLike(640, 480), 85)
	progressive, err := os.ReadFile(filepath.Join("testdata", "jpeg", "pil_prog_420_333x211.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"baseline.jpg", base}, {"progressive.jpg", progressive}} {
		for _, n := range []int64{0, 1, 5} {
			_, err := DecodeReduced(newCountdownCtx(n), tc.data, tc.name, 64)
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("%s cancelled after %d checks: %v", tc.name, n, err)
			}
		}
		if _, err := DecodeReduced(newCountdownCtx(1<<30), tc.data, tc.name, 64); err != nil {
			t.Errorf("%s never cancelled: %v", tc.name, err)
		}
	}
}

// TestDecodeReducedPixelLimit: a sequential JPEG's limit is checked at the
// size it is decoded to, a progressive JPEG's at the full frame (its
// coefficients are kept at that size); both refuse before allocating.
func TestDecodeReducedPixelLimit(t *testing.T) {
	seq := jpegHeader(65000, 65000)
	prog := bytes.Clone(seq)
	prog[bytes.Index(prog, []byte{0xff, 0xc0})+1] = 0xc2
	ctx := context.Background()
	var err error
	a := bytesAllocated(func() { _, err = DecodeReduced(ctx, seq, "seq.jpg", 20000) })
	checkRefused(t, err, ErrTooLarge, "seq.jpg", "decoded at 1/2", a)
	a = bytesAllocated(func() { _, err = DecodeReduced(ctx, prog, "prog.jpg", 256) })
	checkRefused(t, err, ErrTooLarge, "prog.jpg", "65000x65000", a)
	// At 1/8 the sequential frame is 8125x8125, within the limit: it gets
	// as far as its missing scan.
	if _, err := DecodeReduced(ctx, seq, "seq.jpg", 256); !errors.Is(err, ErrCorrupt) {
		t.Errorf("65000x65000 header at 1/8: %v, want a corrupt-file error", err)
	}
}

// TestDecodeReducedRAW: the smallest preview whose longer side keeps
// minSide is used (then DCT-scaled), with the RAW's orientation. Most built
// files hold a 160x120 thumbnail and a 480x320 preview; ARW only a 320x240
// one, RW2 and RAF only the 480x320 one.
func TestDecodeReducedRAW(t *testing.T) {
	type size struct{ w, h int }
	want := map[int]map[string]size{ // minSide -> family ("" for the rest) -> size
		150:  {"": {160, 120}, "ARW": {160, 120}, "RW2": {240, 160}, "RAF": {240, 160}},
		200:  {"": {240, 160}, "ARW": {320, 240}, "RW2": {240, 160}, "RAF": {240, 160}},
		80:   {"": {80, 60}, "ARW": {80, 60}, "RW2": {120, 80}, "RAF": {120, 80}},
		5000: {"": {480, 320}, "ARW": {320, 240}, "RW2": {480, 320}, "RAF": {480, 320}},
	}
	for _, c := range rawCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for minSide, sizes := range want {
				s, ok := sizes[c.name]
				if !ok {
					s = sizes[""]
				}
				if c.orient >= 5 {
					s.w, s.h = s.h, s.w
				}
				img, err := DecodeReduced(context.Background(), c.data, c.file, minSide)
				if err != nil {
					t.Fatal(err)
				}
				if img.Rect.Dx() != s.w || img.Rect.Dy() != s.h {
					t.Errorf("minSide %d: %v, want %dx%d", minSide, img.Rect.Size(), s.w, s.h)
				}
			}
		})
	}
}

// TestDecodeReducedHostile: bad files give the errors Decode gives, naming
// the file.
func TestDecodeReducedHostile(t *testing.T) {
	photo := readTestdata(t, "orient6.jpg")
	for _, tc := range []struct {
		name, file string
		data       []byte
		want       error
	}{
		{"empty", "a.jpg", nil, ErrCorrupt},
		{"text", "notes.jpg", []byte("just some text\n"), ErrUnknownFormat},
		{"truncated jpeg", "cut.jpg", photo[:len(photo)/2], ErrCorrupt},
		{"jpeg header only", "head.jpg", photo[:20], ErrCorrupt},
		{"heic without meta", "a.heic", []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), ErrCorrupt},
		{"avif without meta", "a.avif", []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"), ErrCorrupt},
		{"cr2 without preview", "a.cr2", []byte("II*\x00\x10\x00\x00\x00CR\x02\x00\x00\x00\x00\x00"), ErrUnsupported},
		{"jpeg xl", "a.jxl", []byte("\xff\x0a\xfa\x7f"), ErrUnsupported},
	} {
		var err error
		a := bytesAllocated(func() { _, err = DecodeReduced(context.Background(), tc.data, tc.file, 256) })
		checkRefused(t, err, tc.want, tc.file, "", a)
	}
}

// FuzzDecodeReduced feeds arbitrary bytes and sizes to DecodeReduced: an
// error naming the file or an image, never a panic.
func FuzzDecodeReduced(f *testing.F) {
	for _, name := range []string{"orient6.jpg", "blocks2_125x79.jpg", "blocks_gray.jpg", "palette.png"} {
		b := readTestdata(f, name)
		f.Add(b, name, 16)
		f.Add(b[:len(b)*2/3], name, 1)
	}
	for _, name := range []string{"pil_prog_420_333x211.jpg", "cjpeg_arithmetic_prog_97x35.jpg", "jpegtran_partial_97x35.jpg", "cjpeg_411_q85_333x211.jpg"} {
		b, err := os.ReadFile(filepath.Join("testdata", "jpeg", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, name, 30)
	}
	f.Add(readHEIFTestdata(f, "yuv420.heic"), "a.heic", 8)
	f.Add(jpegHeader(1, 65535), "h.jpg", 100)
	f.Fuzz(func(t *testing.T, data []byte, name string, minSide int) {
		img, err := DecodeReduced(context.Background(), data, name, minSide)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name %q", err, name)
			}
			return
		}
		if b := img.Rect; b.Dx() <= 0 || b.Dy() <= 0 || len(img.Pix) != 4*b.Dx()*b.Dy() {
			t.Fatalf("image %v with %d bytes", b, len(img.Pix))
		}
	})
}

// heifEncode writes img as PNG and encodes it with heif-enc and args.
func heifEncode(t testing.TB, img image.Image, args ...string) []byte {
	t.Helper()
	enc := heifNeedTool(t, "heif-enc")
	dir := t.TempDir()
	src, out := filepath.Join(dir, "in.png"), filepath.Join(dir, "out.heif")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(f, img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
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

// smoothPicture is a w x h image without fine texture, whose quadrants
// differ (so a turned or wrong image is far from it): scaled copies made
// by different filters stay within a few levels of each other.
func smoothPicture(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b := 40+160*x/w, 30+180*y/h, 120
			if x < w/3 && y < h/3 {
				r, g, b = 220, 40, 40
			}
			if x > w/2 && y > h*2/3 {
				b = 230
			}
			p := m.Pix[m.PixOffset(x, y):]
			p[0], p[1], p[2], p[3] = byte(r), byte(g), byte(b), 255
		}
	}
	return m
}

// heifItemExtent returns where the data of item id is in a file heif-enc
// wrote (iloc version 0 or 1, construction method 0, one extent).
func heifItemExtent(t testing.TB, file []byte, id uint32) (off, n int) {
	t.Helper()
	iloc := bmffMustFind(t, bmffMustFind(t, file, "meta")[4:], "iloc")
	v, offSize, lenSize, baseSize := iloc[0], int(iloc[4]>>4), int(iloc[4]&15), int(iloc[5]>>4)
	p := 8
	get := func(size int) int {
		x := 0
		for i := 0; i < size; i++ {
			x = x<<8 | int(iloc[p+i])
		}
		p += size
		return x
	}
	for k := int(binary.BigEndian.Uint16(iloc[6:])); k > 0; k-- {
		item := uint32(get(2))
		if v >= 1 {
			get(2)
		}
		get(2)
		base := get(baseSize)
		extents := get(2)
		for e := 0; e < extents; e++ {
			o, l := base+get(offSize), get(lenSize)
			if item == id {
				return o, l
			}
		}
	}
	t.Fatalf("item %d not in iloc", id)
	return 0, 0
}

// TestDecodeReducedHEIFThumbnail: a HEIC or AVIF with a thumbnail item
// (heif-enc -t 256) is shown through it when it keeps minSide, with the
// irot the file gives it, and through the primary image otherwise or when
// the thumbnail does not decode as described.
func TestDecodeReducedHEIFThumbnail(t *testing.T) {
	pic := smoothPicture(640, 480)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"t.heic", []string{"-q", "90", "-t", "256"}},
		{"t.avif", []string{"-A", "-q", "90", "-t", "256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := heifEncode(t, pic, tc.args...)
			info, err := parseHEIF(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.thumbs) != 1 || info.thumbs[0].w != 256 || info.thumbs[0].h != 192 {
				t.Fatalf("heif-enc wrote thumbnails %+v, want one of 256x192", info.thumbs)
			}
			ctx := context.Background()
			for _, turn := range []bool{false, true} {
				file, w, h := data, 256, 192
				if turn { // a quarter turn on the primary image and the thumbnail
					file, w, h = heifAddProps(t, data, true, irotBox(1)), 192, 256
				}
				full, err := Decode(file, tc.name, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeReduced(ctx, file, tc.name, 256)
				if err != nil {
					t.Fatal(err)
				}
				if got.Rect.Dx() != w || got.Rect.Dy() != h {
					t.Fatalf("turned %v: %v, want the %dx%d thumbnail", turn, got.Rect.Size(), w, h)
				}
				d := meanAbsDiff(t, got, boxShrink(full, w, h))
				t.Logf("turned %v: thumbnail %.2f levels from the primary image averaged down", turn, d)
				if d > 4 {
					t.Errorf("turned %v: thumbnail is %.2f levels from the primary image averaged down", turn, d)
				}
				big, err := DecodeReduced(ctx, file, tc.name, 257)
				if err != nil || !bytes.Equal(big.Pix, full.Pix) {
					t.Errorf("turned %v, minSide 257: %v %v, want the primary image", turn, big.Rect.Size(), err)
				}
			}
			// A thumbnail that does not decode gives way to the primary image.
			// (Not for AVIF: gen2brain's decode.c reports success with an
			// untouched buffer when libavif fails on the frame.)
			if tc.name == "t.avif" {
				return
			}
			off, n := heifItemExtent(t, data, info.thumbs[0].id)
			broken := bytes.Clone(data)
			for i := off; i < off+n; i++ {
				broken[i] = 0
			}
			got, err := DecodeReduced(ctx, broken, tc.name, 256)
			if err != nil || got.Rect.Dx() != 640 || got.Rect.Dy() != 480 {
				t.Errorf("broken thumbnail: %v %v, want the 640x480 primary image", got.Rect.Size(), err)
			}
		})
	}
}

// TestDecodeReducedAVIFTruncatedThumbnail: heif-enc writes the thumbnail's
// data after the primary image's, so an AVIF cut short by a few bytes
// keeps a whole primary image and a truncated thumbnail, which libavif
// would decode as if whole. It gives way to the primary image.
func TestDecodeReducedAVIFTruncatedThumbnail(t *testing.T) {
	data := heifEncode(t, smoothPicture(320, 240), "-A", "-q", "90", "-t", "128")
	info, err := parseHEIF(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.thumbs) != 1 || info.thumbs[0].w != 128 {
		t.Fatalf("heif-enc wrote thumbnails %+v, want one of 128x96", info.thumbs)
	}
	if off, n := heifItemExtent(t, data, info.thumbs[0].id); off+n != len(data) {
		t.Fatalf("the thumbnail's data is at %d+%d in %d bytes, not at the end", off, n, len(data))
	}
	ctx := context.Background()
	got, err := DecodeReduced(ctx, data, "t.avif", 96)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rect.Dx() != 128 {
		t.Fatalf("whole file: %v, want the 128x96 thumbnail", got.Rect.Size())
	}
	for _, cut := range []int{1, 50, 200} {
		got, err := DecodeReduced(ctx, data[:len(data)-cut], "t.avif", 96)
		if err != nil {
			t.Errorf("cut by %d bytes: %v", cut, err)
		} else if got.Rect.Dx() != 320 || got.Rect.Dy() != 240 {
			t.Errorf("cut by %d bytes: %v, want the 320x240 primary image", cut, got.Rect.Size())
		}
	}
}

// TestDecodeReducedHEIFCancel: cancelling the context stops a HEIC or AVIF
// decode inside the WebAssembly decoder; the error is the context's, not
// ErrCorrupt, and the decoder works for the next call.
func TestDecodeReducedHEIFCancel(t *testing.T) {
	pic := smoothPicture(2048, 2048)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"big.heic", []string{"-q", "50", "-p", "preset=ultrafast"}},
		{"big.avif", []string{"-A", "-q", "50", "-p", "speed=9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := heifEncode(t, pic, tc.args...)
			small := "yuv420" + filepath.Ext(tc.name)
			smallData := readHEIFTestdata(t, small)
			decodeSmall := func() { // with a context that can end: the stoppable build
				live, end := context.WithCancel(context.Background())
				defer end()
				if img, err := DecodeReduced(live, smallData, small, 16); err != nil || img.Rect.Dx() != 67 {
					t.Fatalf("decode of %s: %v %v", small, img, err)
				}
			}
			decodeSmall() // compiles the module first
			ctx, cancel := context.WithCancel(context.Background())
			var cancelled atomic.Int64
			stop := time.AfterFunc(20*time.Millisecond, func() {
				cancelled.Store(time.Now().UnixNano())
				cancel()
			})
			defer stop.Stop()
			_, err := DecodeReduced(ctx, data, tc.name, 256)
			if at := cancelled.Load(); at != 0 {
				t.Logf("returned %v after the cancel: %v", time.Duration(time.Now().UnixNano()-at), err)
			}
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("cancelled decode: %v, want context.Canceled naming the file", err)
			}
			decodeSmall()
		})
	}
}
