package preprocess

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// rowsCorpus returns the corpus JPEGs and a few more: odd sizes and
// grey, encoded by Go.
func rowsCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "jpeg", "*.jpg"))
	if err != nil || len(files) < 60 {
		t.Fatalf("testdata/jpeg: %d files, %v", len(files), err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	for _, sz := range [][2]int{{1, 1}, {17, 5}, {224, 300}, {301, 224}, {640, 37}} {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, photoLike(sz[0], sz[1]), &jpeg.Options{Quality: 80}); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("go_%dx%d.jpg", sz[0], sz[1])] = buf.Bytes()
		g := image.NewGray(image.Rect(0, 0, sz[0], sz[1]))
		for i := range g.Pix {
			g.Pix[i] = byte(i * 7)
		}
		buf.Reset()
		if err := jpeg.Encode(&buf, g, nil); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("go_grey_%dx%d.jpg", sz[0], sz[1])] = buf.Bytes()
	}
	return out
}

// TestJPEGRowsMatchWhole requires Bytes to give, for every corpus JPEG,
// the tensor (or the error) of decoding the whole image first, under
// resizes that leave out the horizontal pass, the vertical one or both,
// crops wider than the resize, and the scalar horizontal pass.
func TestJPEGRowsMatchWhole(t *testing.T) {
	corpus := rowsCorpus(t)
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	slices.Sort(names)
	configs := map[string]Config{"default": DefaultConfig()}
	small := DefaultConfig()
	small.ShortestEdge, small.CropWidth, small.CropHeight = 64, 48, 40
	configs["small"] = small
	wide := DefaultConfig()
	wide.ShortestEdge, wide.CropWidth, wide.CropHeight = 100, 140, 90
	configs["crop-past-resize"] = wide
	none := DefaultConfig()
	none.SkipResize, none.CropWidth, none.CropHeight = true, 32, 32
	configs["no-resize"] = none
	fixed := DefaultConfig()
	fixed.ShortestEdge, fixed.ResizeWidth, fixed.ResizeHeight, fixed.SkipCenterCrop = 0, 224, 60, true
	configs["fixed-224x60"] = fixed
	defer func(a, b bool) { jpegWhole, hpassScalar = a, b }(jpegWhole, hpassScalar)
	rowsGiven := 0
	for cname, cfg := range configs {
		for _, scalar := range []bool{false, true} {
			hpassScalar = scalar
			p := New(cfg, Options{IgnoreEXIF: true})
			for _, n := range names {
				data := corpus[n]
				jpegWhole = true
				want, wantErr := p.Bytes(data, n)
				jpegWhole = false
				got, ok, gotErr := p.jpegRows(data, n)
				if !ok {
					t.Fatalf("%s: not taken as a JPEG by rows", n)
				}
				rowsGiven++
				switch {
				case (wantErr == nil) != (gotErr == nil):
					t.Errorf("%s %s scalar=%v: rows error %v, whole %v", cname, n, scalar, gotErr, wantErr)
				case wantErr != nil && wantErr.Error() != gotErr.Error():
					t.Errorf("%s %s: rows error %q, whole %q", cname, n, gotErr, wantErr)
				case !slices.Equal(got, want):
					t.Errorf("%s %s scalar=%v: tensors differ", cname, n, scalar)
				}
			}
		}
	}
	if rowsGiven == 0 {
		t.Fatal("nothing compared")
	}
}

// rowsRecorder keeps the rows a decode gives and when they came.
type rowsRecorder struct {
	d          *jpegDecoder
	w, h       int
	begun      int
	rgb        []byte
	order      []int
	duringScan int // rows given before the first scan ended
}

func (r *rowsRecorder) begin(w, h int) error {
	r.begun++
	r.w, r.h = w, h
	r.rgb = make([]byte, w*h*3)
	return nil
}

func (r *rowsRecorder) row(y int, rgb []byte) {
	if len(rgb) != r.w*3 {
		panic(fmt.Sprintf("row %d: %d bytes, want %d", y, len(rgb), r.w*3))
	}
	copy(r.rgb[y*r.w*3:], rgb)
	r.order = append(r.order, y)
	if r.d.nscans == 0 {
		r.duringScan++
	}
}

// TestJPEGRowsStream checks how the rows come: a baseline JPEG's while
// its scan is decoded (that is the point: its planes are still in cache),
// each row once and in order unless a later scan changes the planes, and
// in the end the rows of the whole image.
func TestJPEGRowsStream(t *testing.T) {
	corpus := rowsCorpus(t)
	streamed := 0
	for n, data := range corpus {
		whole, _, err := decodeImage(data, n, DefaultMaxPixels)
		if err != nil {
			continue // refused either way: TestJPEGRowsMatchWhole
		}
		want, w, h := toRGB(nil, whole, yccJFIF)
		rec := &rowsRecorder{}
		d := &jpegDecoder{data: data, maxPixels: DefaultMaxPixels, sink: rec}
		rec.d = d
		if _, err := d.decode(); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if rec.begun != 1 || rec.w != w || rec.h != h {
			t.Fatalf("%s: begun %d times at %dx%d, image %dx%d", n, rec.begun, rec.w, rec.h, w, h)
		}
		if !bytes.Equal(rec.rgb, want) {
			t.Errorf("%s: rows differ from the whole image", n)
		}
		inOrder := len(rec.order) == h
		for i, y := range rec.order {
			inOrder = inOrder && y == i
		}
		if d.nscans == 1 && !inOrder {
			t.Errorf("%s: one scan, rows came as %v...", n, rec.order[:min(8, len(rec.order))])
		}
		if !d.progressive && d.nscans == 1 && len(d.comps) > 1 && h > 16*d.vmax {
			// An interleaved baseline scan: all but the last MCU row's
			// rows come before it ends.
			if rec.duringScan == 0 {
				t.Errorf("%s: baseline, no row given during its scan", n)
			}
			streamed++
		}
		if d.progressive && rec.duringScan != 0 {
			t.Errorf("%s: progressive, %d rows given before its scans ended", n, rec.duringScan)
		}
	}
	if streamed < 10 {
		t.Fatalf("only %d baseline files streamed", streamed)
	}
}

// TestJPEGRowsOrientation: a JPEG with each EXIF orientation gives the
// tensor of decoding it whole and turning it (1 to 4 resized row by row,
// 5 to 8 written turned), for sizes odd and even, with both horizontal
// passes.
func TestJPEGRowsOrientation(t *testing.T) {
	defer func(a, b bool) { jpegWhole, hpassScalar = a, b }(jpegWhole, hpassScalar)
	p := New(DefaultConfig(), Options{})
	for _, sz := range [][2]int{{400, 300}, {301, 451}} {
		for o := uint16(1); o <= 8; o++ {
			data := jpegWithOrientation(t, photoLike(sz[0], sz[1]), o)
			if got := exifOrientation(data, fmtJPEG); got != int(o) {
				t.Fatalf("orientation %d reads as %d", o, got)
			}
			for _, scalar := range []bool{false, true} {
				hpassScalar = scalar
				jpegWhole = true
				want, err := p.Bytes(data, "o.jpg")
				if err != nil {
					t.Fatal(err)
				}
				jpegWhole = false
				got, rows, err := p.jpegRows(data, "o.jpg")
				if !rows {
					t.Fatalf("orientation %d: not through the rows", o)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%dx%d orientation %d scalar=%v: tensors differ", sz[0], sz[1], o, scalar)
				}
			}
		}
	}
	// Every corpus file (progressive, several scans, restarts, damage),
	// turned every way.
	hpassScalar = false
	for n, data := range rowsCorpus(t) {
		for o := uint16(2); o <= 8; o++ {
			turned := withOrientation(data, o)
			jpegWhole = true
			want, wantErr := p.Bytes(turned, n)
			jpegWhole = false
			got, _, gotErr := p.jpegRows(turned, n)
			switch {
			case (wantErr == nil) != (gotErr == nil):
				t.Errorf("%s orientation %d: rows error %v, whole %v", n, o, gotErr, wantErr)
			case !slices.Equal(got, want):
				t.Errorf("%s orientation %d: tensors differ", n, o)
			}
		}
	}
}

// FuzzJPEGRows: for any bytes, Bytes through the rows and through a whole
// decode both fail, or give the same tensor. The decoder runs outside
// safely here, so a panic in either path shows.
func FuzzJPEGRows(f *testing.F) {
	addJPEGSeeds(f, "cjpeg_410_q85_333x211.jpg", "cjpeg_22_21_q85_333x211.jpg", "bad_truncated_baseline.jpg")
	const limit = 1 << 16
	cfg := DefaultConfig()
	cfg.ShortestEdge, cfg.CropWidth, cfg.CropHeight = 24, 20, 16
	p := New(cfg, Options{IgnoreEXIF: true, MaxPixels: limit})
	f.Fuzz(func(t *testing.T, data []byte) {
		if f, _ := sniff(data, "f.jpg"); f != fmtJPEG {
			return
		}
		o := 1 + len(data)%8 // every EXIF orientation, turned ones included
		var want []float32
		d := &jpegDecoder{data: data, maxPixels: limit}
		img, wantErr := d.decode()
		if wantErr == nil {
			want, wantErr = p.run(img, yccJFIF, o)
		}
		s := &resizeSink{p: p, o: o}
		d = &jpegDecoder{data: data, maxPixels: limit, sink: s}
		_, gotErr := d.decode()
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("rows error %v, whole %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		got := make([]byte, s.g.cw*s.g.ch*3)
		if err := s.finish(got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.normalize(got, s.g.cw, s.g.ch), want) {
			t.Fatalf("orientation %d: tensors differ", o)
		}
	})
}

// TestJPEGRowsSecondScan: a baseline JPEG whose one interleaved scan is
// followed by another over the same components (here another picture's,
// of the same size and tables) gives the rows of the first while the
// first is decoded, then all rows again: the whole decode's, in every
// orientation.
func TestJPEGRowsSecondScan(t *testing.T) {
	enc := func(seed int) []byte {
		m := photoLike(333, 211)
		for i := range m.Pix {
			m.Pix[i] ^= byte(seed * i)
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 85}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := enc(0), enc(7)
	sos := bytes.Index(b, []byte{0xff, 0xda})
	if sos < 0 || !bytes.HasSuffix(a, []byte{0xff, 0xd9}) {
		t.Fatal("no SOS or EOI where expected")
	}
	data := append(slices.Clone(a[:len(a)-2]), b[sos:]...)
	defer func(w bool) { jpegWhole = w }(jpegWhole)
	p := New(DefaultConfig(), Options{})
	for o := uint16(1); o <= 8; o++ {
		file := withOrientation(data, o)
		jpegWhole = true
		want, err := p.Bytes(file, "two.jpg")
		if err != nil {
			t.Fatal(err)
		}
		other, _ := p.Bytes(withOrientation(a, o), "a.jpg")
		jpegWhole = false
		got, _, err := p.jpegRows(file, "two.jpg")
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(want, other) {
			t.Fatal("the second scan changed nothing: the test shows nothing")
		}
		if !slices.Equal(got, want) {
			t.Errorf("orientation %d: tensors differ", o)
		}
	}
}
