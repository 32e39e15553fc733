package preprocess

import (
	"errors"
	"fmt"
	"image"
	"os"
	"sync"
)

// Version names the pixel output of this package. It changes whenever the
// output of a Processor changes for any input (decoding, colour conversion,
// resampling, normalisation), so an index can tell stale vectors apart.
const Version = "hfclip5-u8aa-1"

// DefaultMaxPixels is the pixel limit when Options.MaxPixels is 0.
const DefaultMaxPixels = 100_000_000

// maxResized bounds a resized side: a 1-pixel-wide strip resized to a
// shortest edge of 224 would otherwise ask for millions of rows of weights.
const maxResized = 1 << 22

var (
	// ErrUnsupported is returned when the file is an image format this
	// package recognises but cannot decode (JPEG XL, PSD, a camera RAW
	// without a usable JPEG preview, a TIFF in CMYK or with JPEG
	// compression); the message names the format or the feature.
	ErrUnsupported = errors.New("unsupported image format")
	// ErrUnknownFormat is returned when the bytes are not any image format
	// this package recognises (a text file named .jpg, say).
	ErrUnknownFormat = errors.New("not a recognised image format")
	// ErrTooLarge is returned when the image header announces more pixels
	// than Options.MaxPixels (checked before any pixel memory is
	// allocated), when the file is too big for that limit, or when the
	// resize would produce an absurd size; the message gives the dimensions.
	ErrTooLarge = errors.New("image too large")
	// ErrCorrupt is returned when a recognised image cannot be decoded:
	// empty, truncated or garbled data, or a decoder failure.
	ErrCorrupt = errors.New("corrupt image")
)

// Options tune a Processor. The zero value applies EXIF orientation and the
// default pixel limit.
type Options struct {
	// IgnoreEXIF keeps the stored orientation, as Hugging Face does when
	// given a PIL image. The default (false) rotates phone photos upright,
	// as PIL's ImageOps.exif_transpose does.
	IgnoreEXIF bool
	// MaxPixels refuses images whose header announces more pixels;
	// 0 means DefaultMaxPixels.
	MaxPixels int
}

// Processor turns images into model input. It is safe for concurrent use;
// run one goroutine per core.
type Processor struct {
	cfg       Config
	opts      Options
	maxPixels int64
	cfgErr    error
	// lut[c][v] is the normalised float32 of 8-bit value v in channel c.
	lut  [3][256]float32
	bufs sync.Pool // *buffers
}

// buffers is per-call scratch kept between calls: a 12-megapixel photo
// needs 36 MB of packed RGB, which should not be garbage every time.
type buffers struct {
	rgb, rot, tmp []byte
}

// New returns a Processor for cfg. An invalid cfg (see Config.Validate) makes
// File and Bytes return its error and Image return nil.
func New(cfg Config, opts Options) *Processor {
	p := &Processor{cfg: cfg, opts: opts, maxPixels: int64(opts.MaxPixels)}
	if p.maxPixels <= 0 {
		p.maxPixels = DefaultMaxPixels
	}
	p.cfgErr = cfg.Validate()
	p.lut = normLUT(cfg)
	return p
}

// Config returns the configuration the Processor was made with.
func (p *Processor) Config() Config { return p.cfg }

// normLUT is section 5 of the spec: HF fuses rescale and normalise into
// (x - mean') / std' with mean' = float32(mean) * (1/rescale) and the same
// for std, a float32 subtraction followed by a float32 division.
func normLUT(cfg Config) (lut [3][256]float32) {
	r := cfg.RescaleFactor
	if r == 0 {
		r = 1.0 / 255
	}
	inv := float32(1 / r)
	for c := 0; c < 3; c++ {
		mean, std := cfg.Mean[c], cfg.Std[c]
		if !cfg.SkipRescale && !cfg.SkipNormalize {
			mean, std = float32(mean*inv), float32(std*inv)
		}
		for v := 0; v < 256; v++ {
			x := float32(v)
			switch {
			case !cfg.SkipNormalize:
				x = float32(x-mean) / std
			case !cfg.SkipRescale:
				x = float32(x * float32(r))
			}
			lut[c][v] = x
		}
	}
	return lut
}

// File reads and preprocesses the image at path: float32 [3, CropHeight,
// CropWidth]. Errors name the file.
func (p *Processor) File(path string) ([]float32, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	if !st.Mode().IsRegular() {
		// A named pipe would block the read, a device never end it.
		return nil, fmt.Errorf("decode %s: not a regular file (%v); not read", path, st.Mode().Type())
	}
	// No image within the pixel limit needs more bytes than 8 per pixel
	// (16-bit RGBA, uncompressed) plus headers; refusing bigger files keeps
	// a mislabelled video from being read into memory.
	if limit := 8*p.maxPixels + 64<<20; st.Size() > limit {
		return nil, fmt.Errorf("decode %s: %w: file is %d MB, over %d MB for a %.0f-megapixel limit",
			path, ErrTooLarge, st.Size()>>20, limit>>20, float64(p.maxPixels)/1e6)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return p.Bytes(data, path)
}

// Bytes preprocesses an encoded image held in memory. The format is found
// from the content; name (a path or any label) is used in error messages and
// only to tell camera RAW files that look like TIFF by their extension.
func (p *Processor) Bytes(data []byte, name string) ([]float32, error) {
	if p.cfgErr != nil {
		return nil, p.cfgErr
	}
	if out, ok, err := p.jpegRows(data, name); ok {
		return out, err
	}
	img, f, err := decodeImageWindow(data, name, p.maxPixels, p.window)
	if err != nil {
		return nil, err
	}
	o := 1
	if !p.opts.IgnoreEXIF {
		o = exifOrientation(data, f)
	}
	out, err := p.run(img, yccFor(f), o)
	releaseDecoded(img) // jpegpool.go: the JPEG decoder's RGB goes back for the next photo
	if err != nil {
		return nil, fmt.Errorf("preprocess %s: %w", name, err)
	}
	return out, nil
}

// jpegRows is Bytes for a JPEG: its rows go from the decoder to the
// resize as they are converted (decodeJPEGRows), with the same output as
// decoding the whole image first, and no whole RGB image is made. A
// photo with a quarter turn (EXIF orientation 5 to 8) has rows that are
// columns of the picture: turnResizer sums them into the resized columns;
// where it does not apply (no resize along a side) they are written
// turned into one image, which is then resized. ok is false when data is
// no JPEG.
func (p *Processor) jpegRows(data []byte, name string) (out []float32, ok bool, err error) {
	if f, _ := sniff(data, name); f != fmtJPEG || jpegWhole {
		return nil, false, nil
	}
	o := 1
	if !p.opts.IgnoreEXIF {
		o = exifOrientation(data, fmtJPEG)
	}
	bufs, _ := p.bufs.Get().(*buffers)
	if bufs == nil {
		bufs = new(buffers)
	}
	defer p.bufs.Put(bufs)
	s := &resizeSink{p: p, o: o, scratch: bufs.tmp, turned: bufs.rot}
	err = decodeJPEGRows(data, name, p.maxPixels, s)
	if s.turned != nil {
		bufs.rot = s.turned
	}
	switch {
	case s.err != nil:
		return nil, true, fmt.Errorf("preprocess %s: %w", name, s.err)
	case err != nil:
		return nil, true, err
	}
	crop := make([]byte, s.g.cw*s.g.ch*3)
	err = s.finish(crop)
	bufs.tmp = s.scratch
	if err != nil {
		return nil, true, fmt.Errorf("preprocess %s: %w", name, err)
	}
	return p.normalize(crop, s.g.cw, s.g.ch), true, nil
}

// jpegWhole makes Bytes decode every JPEG whole before resizing it, as it
// does the other formats (tests and benchmarks compare the two).
var jpegWhole = false

// resizeSink resizes a decode's rows as they come, turned by EXIF
// orientation o as orient does: 2 mirrors each row, 4 swaps the top and
// bottom, 3 both; 5 to 8 write each row as a column of the turned image.
type resizeSink struct {
	p       *Processor
	o       int
	scratch []byte
	g       geometry
	r       *resizer     // orientations 1 to 4
	t       *turnResizer // 5 to 8, when it applies (else turned)
	mirror  []byte       // a row mirrored (2, 3)
	turned  []byte       // the turned image (5 to 8), reused when large enough
	block   []byte       // decoded rows kept for turned (turnRows of them)
	blockY  int          // the first of them
	blockN  int          // how many
	w, h    int          // the decoded size
	err     error        // from begin: the geometry, not the file's bytes
}

func (s *resizeSink) begin(w, h int) error {
	if w <= 0 || h <= 0 {
		s.err = fmt.Errorf("%w: empty image", ErrCorrupt)
		return s.err
	}
	s.w, s.h = w, h
	ow, oh := orientDims(w, h, s.o)
	s.g, s.err = s.p.geometry(ow, oh)
	if s.err != nil {
		return s.err
	}
	switch s.o {
	case 5, 6, 7, 8:
		if s.t = newTurnResizer(s.g, s.o, w, h); s.t == nil {
			s.turned = rgbBuffer(s.turned, w*h*3)
		}
		return nil
	case 2, 3:
		s.mirror = make([]byte, w*3)
	}
	s.r = newResizer(s.g, s.scratch, nil)
	return nil
}

func (s *resizeSink) row(y int, rgb []byte) {
	switch s.o {
	case 5, 6, 7, 8:
		if s.t != nil {
			s.t.row(y, rgb)
		} else {
			s.turn(y, rgb)
		}
		return
	case 3, 4:
		y = s.g.h - 1 - y
	}
	if s.mirror != nil {
		n := len(rgb) / 3
		for x := range n {
			d, p := s.mirror[3*(n-1-x):3*(n-x):3*(n-x)], rgb[3*x:3*x+3:3*x+3]
			d[0], d[1], d[2] = p[0], p[1], p[2]
		}
		rgb = s.mirror
	}
	s.r.row(y, rgb)
}

// finish writes the resized window into crop (g.cw x g.ch packed RGB) once
// every row has come, and leaves in s.scratch the buffer to reuse.
func (s *resizeSink) finish(crop []byte) error {
	switch {
	case s.r != nil:
		s.scratch = s.r.finish(crop)
	case s.t != nil:
		return s.t.finish(crop)
	default:
		s.flushTurn()
		s.scratch = resizeCrop(crop, s.turned, s.g, s.scratch)
	}
	return nil
}

// turnRows is how many decoded rows turn writes at once: 16 pixels of a
// turned row are 48 bytes, most of a cache line, where one row at a time
// touches a line per pixel.
const turnRows = 16

// turn keeps decoded row y for the turned image, and writes the rows kept
// when turnRows consecutive ones are there (or the next is not the one
// after: flushTurn).
func (s *resizeSink) turn(y int, rgb []byte) {
	if s.block == nil {
		s.block = make([]byte, turnRows*s.w*3)
	}
	if s.blockN > 0 && y != s.blockY+s.blockN {
		s.flushTurn()
	}
	if s.blockN == 0 {
		s.blockY = y
	}
	copy(s.block[s.blockN*s.w*3:], rgb)
	if s.blockN++; s.blockN == turnRows {
		s.flushTurn()
	}
}

// flushTurn writes the decoded rows kept as columns of the turned image:
// pixel (x, y) goes to column y (5, 8) or h-1-y (6, 7), row x (5, 6) or
// w-1-x (7, 8), the inverse of orientWalk.
func (s *resizeSink) flushTurn() {
	n := s.blockN
	if n == 0 {
		return
	}
	s.blockN = 0
	w, ow := s.w, s.h // the turned image is s.h pixels wide
	col, dir := s.blockY, 3
	if s.o == 6 || s.o == 7 {
		col, dir = s.h-1-s.blockY, -3
	}
	for x := range w {
		row := x
		if s.o == 7 || s.o == 8 {
			row = w - 1 - x
		}
		i := (row*ow + col) * 3
		for k := range n {
			p, q := s.block[(k*w+x)*3:(k*w+x)*3+3:(k*w+x)*3+3], s.turned[i:i+3:i+3]
			q[0], q[1], q[2] = p[0], p[1], p[2]
			i += dir
		}
	}
}

// Image preprocesses an already decoded image as it is (no EXIF: the
// orientation is the caller's business). A YCbCr image is taken as JPEG
// (full range). It returns nil when the configuration is invalid, the image
// is empty or its resize would be absurdly large.
func (p *Processor) Image(img image.Image) []float32 {
	if p.cfgErr != nil {
		return nil
	}
	out, err := p.run(img, yccJFIF, 1)
	if err != nil {
		return nil
	}
	return out
}

// run is the pipeline after decoding: packed RGB, orientation, resize,
// crop, normalise.
func (p *Processor) run(img image.Image, ycc yccRange, o int) ([]float32, error) {
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 {
		return nil, fmt.Errorf("%w: empty image", ErrCorrupt)
	}
	bufs, _ := p.bufs.Get().(*buffers)
	if bufs == nil {
		bufs = new(buffers)
	}
	defer p.bufs.Put(bufs)
	src, w, h := toRGB(bufs.rgb, img, ycc)
	if _, decoded := img.(*packedRGB); !decoded {
		bufs.rgb = src // the JPEG decoder's pixels are its own (releaseDecoded)
	}
	if o != 1 {
		bufs.rot = rgbBuffer(bufs.rot, len(src))
		w, h = orient(bufs.rot, src, w, h, o)
		src = bufs.rot
	}
	g, err := p.geometry(w, h)
	if err != nil {
		return nil, err
	}
	crop := make([]byte, g.cw*g.ch*3)
	bufs.tmp = resizeCrop(crop, src, g, bufs.tmp)
	return p.normalize(crop, g.cw, g.ch), nil
}

// window is the rectangle of a w x h image, given to run with
// orientation 1, that run reads: the source rows and columns the resize's
// taps of the cropped outputs reach (newResizer's rows and columns). The
// whole image when it cannot tell. Only HEICs are decoded to a window,
// and their EXIF orientation is never applied.
func (p *Processor) window(w, h int) image.Rectangle {
	whole := image.Rect(0, 0, w, h)
	g, err := p.geometry(w, h)
	if err != nil {
		return whole
	}
	x0, x1, y0, y1 := g.window()
	if x0 >= x1 || y0 >= y1 {
		return whole
	}
	span := func(in, out, lo, hi int) (int, int) {
		if in == out {
			return lo, hi
		}
		ps := newPass(in, out, lo, hi)
		a, b := in, 0
		for i := lo; i < hi; i++ {
			start, w := ps.taps(i)
			if len(w) > 0 {
				a, b = min(a, start), max(b, start+len(w))
			}
		}
		return a, b
	}
	ax, bx := span(g.w, g.rw, x0+g.offX, x1+g.offX)
	ay, by := span(g.h, g.rh, y0+g.offY, y1+g.offY)
	if r := image.Rect(ax, ay, bx, by); !r.Empty() {
		return r.Intersect(whole)
	}
	return whole
}

// geometry sizes the resize and places the crop for a w x h image.
func (p *Processor) geometry(w, h int) (geometry, error) {
	c := p.cfg
	g := geometry{w: w, h: h, rw: w, rh: h}
	switch {
	case c.SkipResize:
	case c.ShortestEdge > 0:
		g.rw, g.rh = shortestEdgeSize(w, h, c.ShortestEdge)
	default:
		g.rw, g.rh = c.ResizeWidth, c.ResizeHeight
	}
	if g.rw <= 0 || g.rh <= 0 || g.rw > maxResized || g.rh > maxResized {
		return g, fmt.Errorf("%w: %dx%d would be resized to %dx%d", ErrTooLarge, w, h, g.rw, g.rh)
	}
	g.cw, g.ch = g.rw, g.rh
	if !c.SkipCenterCrop {
		g.cw, g.ch = c.CropWidth, c.CropHeight
		g.offX, g.offY = cropOffset(g.rw, g.cw), cropOffset(g.rh, g.ch)
	}
	if int64(g.cw)*int64(g.ch) > max(p.maxPixels, DefaultMaxPixels) {
		return g, fmt.Errorf("%w: output would be %dx%d", ErrTooLarge, g.cw, g.ch)
	}
	return g, nil
}

// normalize turns packed RGB [h, w, 3] into float32 CHW [3, h, w].
func (p *Processor) normalize(rgb []byte, w, h int) []float32 {
	n := w * h
	out := make([]float32, 3*n)
	r, g, b := out[:n], out[n:2*n], out[2*n:3*n]
	lr, lg, lb := &p.lut[0], &p.lut[1], &p.lut[2]
	for i := range r {
		px := rgb[i*3 : i*3+3 : i*3+3]
		r[i], g[i], b[i] = lr[px[0]], lg[px[1]], lb[px[2]]
	}
	return out
}
