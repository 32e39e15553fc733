package preprocess

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
)

// This file is the JPEG decoder: markers, frame and scan headers, and the
// scan loop. It decodes 8-bit JPEGs, baseline, extended and progressive
// (with successive approximation and restart markers in any scan), Huffman
// (jpeghuff.go) or arithmetic-coded (jpegarith.go), with 1, 3 or 4
// components and any sampling factors, exactly as libjpeg-turbo 2.1 does
// with Pillow's settings (integer "slow" IDCT, fancy upsampling, no merged
// upsampler, no scaling, block smoothing): see jpegidct.go, jpegcolor.go
// and jpegsmooth.go; for display, jpegscale.go adds libjpeg's scaling by
// 1/2, 1/4 and 1/8. Lossless, hierarchical and 12-bit JPEGs are refused
// with ErrUnsupported, as Pillow (or its libjpeg-turbo 2.1) refuses them.

// packedRGB is 8-bit RGB, three bytes a pixel, rows without padding: what
// the JPEG decoder produces, handed on by toRGB without a copy.
type packedRGB struct {
	Pix  []byte
	W, H int
}

func (m *packedRGB) ColorModel() color.Model { return color.RGBAModel }
func (m *packedRGB) Bounds() image.Rectangle { return image.Rect(0, 0, m.W, m.H) }
func (m *packedRGB) At(x, y int) color.Color {
	if x < 0 || y < 0 || x >= m.W || y >= m.H {
		return color.RGBA{}
	}
	p := m.Pix[(y*m.W+x)*3:]
	return color.RGBA{p[0], p[1], p[2], 255}
}

// jpegComp is one component of the frame.
type jpegComp struct {
	id       byte
	h, v     int // sampling factors
	tq       int // quantization table selector
	q        *[64]int32
	bw, bh   int // blocks per row and column, padded to whole MCUs
	wib, hib int // blocks holding image samples (libjpeg's width_in_blocks)
	dw, dh   int // samples holding the image (libjpeg's downsampled_width)
	bs       int // samples a block side gives in plane: 8, or 4, 2, 1 when scaled (jpegscale.go)
	plane    []byte
	coef     []int16 // progressive: 64 coefficients a block, natural order
	pred     int32
	td, ta   int
	dcCtx    int // arithmetic coding: DC conditioning context
	// Progressive: the successive-approximation bit each of the first 10
	// coefficients (zigzag order) is known to, -1 if never coded, now and
	// before the component's latest scan (libjpeg's coef_bits).
	bits, prevBits [10]int
}

type jpegDecoder struct {
	data            []byte
	pos             int
	w, h            int
	comps           []jpegComp
	hmax, vmax      int
	mcusX, mcusY    int
	progressive     bool
	sof             bool
	quant           [4][64]int32
	quantSet        [4]bool
	huff            [2][4]huffTable // [0] DC, [1] AC
	restartInterval int
	jfif, adobe     bool
	adobeTransform  byte
	br              bitReader
	eobrun          int32
	blk             [64]int32
	maxPixels       int64
	arith           bool // arithmetic-coded (SOF9, SOF10): jpegarith.go
	ae              arithDecoder
	aeFailed        bool // libjpeg's ct == -1: the segment's remaining blocks stay zero
	scans           int  // progressive scans read, for libjpeg's coef_bits
	nscans          int  // scans decoded
	visits          int  // blocks visited by the scans so far
	lastGood        int  // iMCU row of the last block decoded from real data
	// Reduced decoding (jpegscale.go): minSide > 0 asks for the smallest
	// scale whose longer side keeps minSide; scale is its denominator (1,
	// 2, 4 or 8) and ow x oh the output size. ctx, when set, is checked at
	// each MCU row.
	minSide int
	scale   int
	ow, oh  int
	ctx     context.Context
	arena   *jpegArena // reused buffers (jpegpool.go), back to the pool when decode returns
	// sink, when set, takes the output rows instead of an image
	// (decodeJPEGRows); stream is its progress.
	sink   rowSink
	stream *rowStream
}

// rowSink takes a decode's rows in place of a whole image.
type rowSink interface {
	// begin is called once, with the output size, before any row.
	begin(w, h int) error
	// row takes output row y, packed RGB, which it must not keep. A row
	// may come again (a later scan changed the planes); the later counts.
	row(y int, rgb []byte)
}

// rowStream is how far the rows have gone to a decode's sink.
type rowStream struct {
	cv   *converter
	buf  []byte
	next int   // rows given, from the top
	done []int // per component, plane rows decoded by the first scan
}

// Markers (ITU T.81 table B.1).
const (
	mSOF0  = 0xc0
	mSOF1  = 0xc1
	mSOF2  = 0xc2
	mSOF9  = 0xc9
	mSOF10 = 0xca
	mDHT   = 0xc4
	mDAC   = 0xcc
	mRST0  = 0xd0
	mRST7  = 0xd7
	mSOI   = 0xd8
	mEOI   = 0xd9
	mSOS   = 0xda
	mDQT   = 0xdb
	mDNL   = 0xdc
	mDRI   = 0xdd
	mAPP0  = 0xe0
	mAPPE  = 0xee
	mAPPF  = 0xef
	mCOM   = 0xfe
	mTEM   = 0x01
)

// Every scan visits every block of its components, whatever its size in
// the file, so a small hostile file of many scans could ask for hours of
// work. Real files have about 10 scans, each over one component; these
// bounds are far above that (libjpeg-turbo 2.1 has none; 3.x's fuzzers
// stop at 500 scans).
const (
	maxJPEGScans      = 1000
	maxJPEGBlockPass  = 100     // block visits, in passes over all blocks
	minJPEGBlockVisit = 1 << 20 // block visits always allowed
)

// errJPEGTooLarge carries the dimensions of a frame over the pixel limit,
// and the scale denominator the limit was checked at.
type errJPEGTooLarge struct{ w, h, scale int }

func (e errJPEGTooLarge) Error() string { return fmt.Sprintf("%dx%d", e.w, e.h) }

// decodeJPEGImage is decodeImage for JPEG: the frame header is checked
// against maxPixels before anything is allocated for the image.
func decodeJPEGImage(data []byte, name string, maxPixels int64) (image.Image, format, error) {
	img, err := safely(func() (image.Image, error) {
		d := &jpegDecoder{data: data, maxPixels: maxPixels}
		return d.decode()
	})
	if err != nil {
		return nil, fmtJPEG, jpegError(name, err, maxPixels)
	}
	return img, fmtJPEG, nil
}

// decodeJPEGRows decodes a JPEG at full size and gives its rows to sink
// as they are converted, instead of making the whole RGB image: a
// baseline JPEG whose one scan holds every component has its rows
// converted as each MCU row is decoded, while its planes are still in
// cache, and a resize reading them never needs the 36 MB of a 12 MP
// photo's RGB. The rows are those decodeJPEGImage's image holds.
func decodeJPEGRows(data []byte, name string, maxPixels int64, sink rowSink) error {
	_, err := safely(func() (image.Image, error) {
		d := &jpegDecoder{data: data, maxPixels: maxPixels, sink: sink}
		return d.decode()
	})
	if err != nil {
		return jpegError(name, err, maxPixels)
	}
	return nil
}

// startRows tells the sink the output size and prepares the conversion,
// once.
func (d *jpegDecoder) startRows() error {
	if d.stream != nil {
		return nil
	}
	if err := d.sink.begin(d.ow, d.oh); err != nil {
		return err
	}
	cv, err := d.newConverter()
	if err != nil {
		return err
	}
	d.stream = &rowStream{cv: cv, buf: make([]byte, d.ow*3), done: make([]int, len(d.comps))}
	return nil
}

// emitRows converts the rows not yet given to the sink, up to the last
// one the planes can make when component i holds its first done[i] rows
// (all rows when done is nil).
func (d *jpegDecoder) emitRows(done []int) error {
	if err := d.startRows(); err != nil {
		return err
	}
	st := d.stream
	end := d.oh
	if done != nil {
		end = st.cv.ready(st.next, done)
	}
	for ; st.next < end; st.next++ {
		st.cv.row(st.next, st.buf)
		d.sink.row(st.next, st.buf)
	}
	return nil
}

// streamRows gives the sink the rows that MCU rows 0..my-1 of scan s
// complete, when s is the frame's first scan, holds every component and
// writes the planes directly (baseline, full size).
func (d *jpegDecoder) streamRows(s *scanHeader, my int) error {
	if d.sink == nil || d.progressive || d.scale != 1 || d.nscans != 0 || len(s.comps) != len(d.comps) {
		return nil
	}
	if err := d.startRows(); err != nil {
		return err
	}
	for i := range d.comps {
		rows := 8 // a block row: a scan of one component has one block an MCU
		if len(s.comps) > 1 {
			rows = d.comps[i].v * 8
		}
		d.stream.done[i] = my * rows
	}
	return d.emitRows(d.stream.done)
}

// jpegError wraps an error of the JPEG decoder for the file name.
func jpegError(name string, err error, maxPixels int64) error {
	var big errJPEGTooLarge
	switch {
	case errors.As(err, &big) && big.scale > 1:
		return fmt.Errorf("%w (decoded at 1/%d)", tooLarge(name, ceilDiv(big.w, big.scale), ceilDiv(big.h, big.scale), maxPixels), big.scale)
	case errors.As(err, &big):
		return tooLarge(name, big.w, big.h, maxPixels)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("decode %s: %w", name, err) // not the file's fault
	case errors.Is(err, ErrUnsupported):
		return fmt.Errorf("decode %s: JPEG: %w", name, err)
	}
	return fmt.Errorf("decode %s: %w: JPEG: %w", name, ErrCorrupt, err)
}

// segment returns the payload of the marker segment whose length field is
// at d.pos and moves past it.
func (d *jpegDecoder) segment(marker byte) ([]byte, error) {
	if d.pos+2 > len(d.data) {
		return nil, errJPEGTruncated
	}
	n := int(d.data[d.pos])<<8 | int(d.data[d.pos+1])
	if n < 2 {
		return nil, fmt.Errorf("marker 0x%02x: bad length %d", marker, n)
	}
	if d.pos+n > len(d.data) {
		return nil, errJPEGTruncated
	}
	seg := d.data[d.pos+2 : d.pos+n]
	d.pos += n
	return seg, nil
}

// nextMarker skips to the next marker (libjpeg skips garbage with a
// warning) and returns its code, d.pos just past it.
func (d *jpegDecoder) nextMarker() (byte, error) {
	for {
		for d.pos < len(d.data) && d.data[d.pos] != 0xff {
			d.pos++
		}
		for d.pos < len(d.data) && d.data[d.pos] == 0xff {
			d.pos++
		}
		if d.pos >= len(d.data) {
			return 0, errJPEGTruncated
		}
		m := d.data[d.pos]
		d.pos++
		if m != 0 {
			return m, nil
		}
	}
}

func (d *jpegDecoder) decode() (image.Image, error) {
	if len(d.data) < 2 || d.data[0] != 0xff || d.data[1] != mSOI {
		return nil, errors.New("no SOI marker")
	}
	d.pos = 2
	d.arena = getJPEGArena()
	defer func() { jpegArenas.put(d.arena); d.arena = nil }()
	for i := range d.ae.dcU {
		d.ae.dcU[i], d.ae.acK[i] = 1, 5 // T.81 defaults without DAC
	}
	for {
		m, err := d.nextMarker()
		if err != nil {
			if d.sof {
				return nil, err
			}
			return nil, fmt.Errorf("no frame header: %w", err)
		}
		switch {
		case m == mSOF0 || m == mSOF1 || m == mSOF2 || m == mSOF9 || m == mSOF10:
			d.arith = m == mSOF9 || m == mSOF10
			if err := d.frame(m == mSOF2 || m == mSOF10); err != nil {
				return nil, err
			}
		case m >= 0xc3 && m <= 0xcf && m != mDHT && m != mDAC:
			return nil, fmt.Errorf("%w: %s JPEG (marker 0x%02x)", ErrUnsupported, sofKind(m), m)
		case m == mDHT:
			if err := d.dht(); err != nil {
				return nil, err
			}
		case m == mDQT:
			if err := d.dqt(); err != nil {
				return nil, err
			}
		case m == mDRI:
			seg, err := d.segment(m)
			if err != nil {
				return nil, err
			}
			if len(seg) != 2 {
				return nil, errors.New("bad DRI length")
			}
			d.restartInterval = int(seg[0])<<8 | int(seg[1])
		case m == mSOS:
			if !d.sof {
				return nil, errors.New("scan before frame header")
			}
			if err := d.scan(); err != nil {
				return nil, err
			}
			d.nscans++
		case m == mEOI:
			if !d.sof || d.nscans == 0 {
				return nil, errors.New("no image before EOI")
			}
			return d.output()
		case m == mSOI:
			return nil, errors.New("duplicate SOI marker")
		case m >= mRST0 && m <= mRST7, m == mTEM:
			// Parameterless, ignored as libjpeg does.
		case m == mAPP0 || m == mAPPE:
			seg, err := d.segment(m)
			if err != nil {
				return nil, err
			}
			if m == mAPP0 && len(seg) >= 14 && string(seg[:5]) == "JFIF\x00" {
				d.jfif = true
			}
			if m == mAPPE && len(seg) >= 12 && string(seg[:5]) == "Adobe" {
				d.adobe, d.adobeTransform = true, seg[11]
			}
		case m == mDAC:
			if err := d.dac(); err != nil {
				return nil, err
			}
		case m >= mAPP0 && m <= mAPPF, m == mCOM, m == mDNL:
			if _, err := d.segment(m); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown marker 0x%02x", m)
		}
	}
}

func sofKind(m byte) string {
	switch m {
	case 0xc3, 0xc7, 0xcb, 0xcf:
		return "lossless"
	case 0xc5, 0xc6, 0xcd, 0xce:
		return "hierarchical"
	}
	return "reserved-type"
}

// frame reads SOF0/1/2, checks the size against the pixel limit and
// allocates the planes.
func (d *jpegDecoder) frame(progressive bool) error {
	if d.sof {
		return errors.New("duplicate frame header")
	}
	seg, err := d.segment(mSOF0)
	if err != nil {
		return err
	}
	if len(seg) < 6 {
		return errors.New("short frame header")
	}
	if seg[0] != 8 {
		return fmt.Errorf("%w: %d-bit JPEG", ErrUnsupported, seg[0])
	}
	d.h = int(seg[1])<<8 | int(seg[2])
	d.w = int(seg[3])<<8 | int(seg[4])
	nc := int(seg[5])
	if d.w == 0 || d.h == 0 {
		return fmt.Errorf("image is %dx%d", d.w, d.h)
	}
	if len(seg) != 6+3*nc {
		return errors.New("bad frame header length")
	}
	if nc != 1 && nc != 3 && nc != 4 {
		return fmt.Errorf("%w: %d-component JPEG", ErrUnsupported, nc)
	}
	d.scale = jpegScaleFor(d.w, d.h, d.minSide)
	d.ow, d.oh = ceilDiv(d.w, d.scale), ceilDiv(d.h, d.scale)
	if ls := d.limitScale(progressive); int64(ceilDiv(d.w, ls))*int64(ceilDiv(d.h, ls)) > d.maxPixels {
		return errJPEGTooLarge{d.w, d.h, ls}
	}
	d.sof, d.progressive = true, progressive
	d.comps = make([]jpegComp, nc)
	d.hmax, d.vmax = 1, 1
	for i := range d.comps {
		c := &d.comps[i]
		p := seg[6+3*i:]
		c.id, c.h, c.v, c.tq = p[0], int(p[1]>>4), int(p[1]&15), int(p[2])
		if c.h < 1 || c.h > 4 || c.v < 1 || c.v > 4 {
			return fmt.Errorf("bad sampling factors %dx%d", c.h, c.v)
		}
		if c.tq > 3 {
			return fmt.Errorf("bad quantization table %d", c.tq)
		}
		d.hmax, d.vmax = max(d.hmax, c.h), max(d.vmax, c.v)
	}
	d.mcusX = (d.w + 8*d.hmax - 1) / (8 * d.hmax)
	d.mcusY = (d.h + 8*d.vmax - 1) / (8 * d.vmax)
	for i := range d.comps {
		c := &d.comps[i]
		c.dw = (d.w*c.h + d.hmax - 1) / d.hmax
		c.dh = (d.h*c.v + d.vmax - 1) / d.vmax
		c.wib, c.hib = (c.dw+7)/8, (c.dh+7)/8
		c.bw, c.bh = d.mcusX*c.h, d.mcusY*c.v
		c.bs = 8
		if d.scale > 1 {
			d.scaleComponent(c) // jpegscale.go: block size, scaled dw, dh
		}
		c.plane = d.arena.plane(i, c.bw*c.bs*c.bh*c.bs)
		if progressive {
			c.coef = d.arena.coef(i, c.bw*c.bh*64)
			for k := range c.bits {
				c.bits[k] = -1
			}
		}
	}
	return nil
}

func (d *jpegDecoder) dht() error {
	seg, err := d.segment(mDHT)
	if err != nil {
		return err
	}
	for len(seg) > 0 {
		if len(seg) < 17 {
			return errors.New("short DHT segment")
		}
		class, id := seg[0]>>4, seg[0]&15
		if class > 1 || id > 3 {
			return fmt.Errorf("bad Huffman table 0x%02x", seg[0])
		}
		var counts [16]byte
		copy(counts[:], seg[1:17])
		n := 0
		for _, c := range counts {
			n += int(c)
		}
		if n > 256 || len(seg) < 17+n {
			return errors.New("bad DHT segment")
		}
		if err := d.huff[class][id].build(&counts, seg[17:17+n]); err != nil {
			return err
		}
		seg = seg[17+n:]
	}
	return nil
}

func (d *jpegDecoder) dqt() error {
	seg, err := d.segment(mDQT)
	if err != nil {
		return err
	}
	for len(seg) > 0 {
		prec, id := seg[0]>>4, seg[0]&15
		if prec > 1 || id > 3 {
			return fmt.Errorf("bad quantization table 0x%02x", seg[0])
		}
		n := 64 << prec
		if len(seg) < 1+n {
			return errors.New("short DQT segment")
		}
		for k := 0; k < 64; k++ {
			v := int32(seg[1+k])
			if prec == 1 {
				v = int32(seg[1+2*k])<<8 | int32(seg[2+2*k])
			}
			d.quant[id][zigzag[k]] = v
		}
		d.quantSet[id] = true
		seg = seg[1+n:]
	}
	return nil
}

// scanHeader is a parsed SOS segment.
type scanHeader struct {
	comps  []*jpegComp
	ss, se int
	ah, al uint
}

func (d *jpegDecoder) scanHeader() (scanHeader, error) {
	var s scanHeader
	seg, err := d.segment(mSOS)
	if err != nil {
		return s, err
	}
	if len(seg) < 1 {
		return s, errors.New("short scan header")
	}
	ns := int(seg[0])
	if ns < 1 || ns > 4 || len(seg) != 4+2*ns {
		return s, errors.New("bad scan header")
	}
	blocks := 0
	// Components are matched as libjpeg-turbo's get_sos does, which also
	// copes with frames whose component ids repeat: the first frame
	// component with the id whose scan slot of the same index is free.
	var slots [4]*jpegComp
	for i := 0; i < ns; i++ {
		id, t := seg[1+2*i], seg[2+2*i]
		var c *jpegComp
		for ci := 0; ci < min(len(d.comps), 4); ci++ {
			if d.comps[ci].id == id && slots[ci] == nil {
				c = &d.comps[ci]
				break
			}
		}
		for _, o := range s.comps {
			if o == c {
				c = nil
			}
		}
		if c == nil {
			return s, fmt.Errorf("scan names unknown or repeated component %d", id)
		}
		slots[i] = c
		c.td, c.ta = int(t>>4), int(t&15)
		s.comps = append(s.comps, c)
		blocks += c.h * c.v
	}
	if ns > 1 && blocks > 10 {
		return s, errors.New("too many blocks in an MCU")
	}
	p := seg[1+2*ns:]
	s.ss, s.se, s.ah, s.al = int(p[0]), int(p[1]), uint(p[2]>>4), uint(p[2]&15)
	if d.progressive {
		bad := s.ss == 0 && s.se != 0 || s.ss > 0 && (s.ss > s.se || s.se > 63 || ns != 1) ||
			s.ah != 0 && s.al != s.ah-1 || s.al > 13
		if bad {
			return s, fmt.Errorf("bad progression parameters Ss=%d Se=%d Ah=%d Al=%d", s.ss, s.se, s.ah, s.al)
		}
	}
	// Latch the quantization tables on a component's first scan, as
	// libjpeg does; later DQT segments do not change them.
	for _, c := range s.comps {
		if c.q == nil {
			if !d.quantSet[c.tq] {
				return s, fmt.Errorf("quantization table %d not defined", c.tq)
			}
			q := d.quant[c.tq]
			c.q = &q
		}
	}
	if d.arith {
		return s, nil
	}
	// The tables this scan will use must exist; DC symbols are sizes.
	needDC := !d.progressive || s.ss == 0 && s.ah == 0
	needAC := !d.progressive || s.ss > 0
	for _, c := range s.comps {
		if needDC && c.td > 3 || needAC && c.ta > 3 {
			return s, errors.New("bad Huffman table selector")
		}
		if needDC {
			t := &d.huff[0][c.td]
			if !t.defined {
				return s, fmt.Errorf("DC Huffman table %d not defined", c.td)
			}
			if t.maxSym > 15 {
				return s, errors.New("bad DC Huffman table")
			}
		}
		if needAC && !d.huff[1][c.ta].defined {
			return s, fmt.Errorf("AC Huffman table %d not defined", c.ta)
		}
	}
	return s, nil
}

// scan decodes the entropy-coded data of one scan.
func (d *jpegDecoder) scan() error {
	s, err := d.scanHeader()
	if err != nil {
		return err
	}
	for _, c := range s.comps {
		c.pred = 0
	}
	d.eobrun = 0
	if d.nscans >= maxJPEGScans {
		return fmt.Errorf("more than %d scans", maxJPEGScans)
	}
	all, visits := 0, 0
	for i := range d.comps {
		all += d.comps[i].bw * d.comps[i].bh
	}
	if len(s.comps) == 1 {
		visits = s.comps[0].wib * s.comps[0].hib
	} else {
		for _, c := range s.comps {
			visits += d.mcusX * d.mcusY * c.h * c.v
		}
	}
	if d.visits += visits; d.visits > max(maxJPEGBlockPass*all, minJPEGBlockVisit) {
		return fmt.Errorf("scans decode the image more than %d times over", maxJPEGBlockPass)
	}
	if d.progressive {
		d.scans++
		for _, c := range s.comps {
			for k := min(s.ss, 1); k <= min(max(s.se, 9), 9); k++ {
				c.prevBits[k] = 0
				if d.scans > 1 {
					c.prevBits[k] = c.bits[k]
				}
			}
			for k := s.ss; k <= min(s.se, 9); k++ {
				c.bits[k] = int(s.al)
			}
		}
	}
	d.br.reset(d.data, d.pos)
	if d.arith {
		d.arithStart(&s, d.pos)
	}
	var mcusX, mcusY int
	if len(s.comps) == 1 {
		mcusX, mcusY = s.comps[0].wib, s.comps[0].hib
	} else {
		mcusX, mcusY = d.mcusX, d.mcusY
	}
	total := mcusX * mcusY
	ri := d.restartInterval
	nextRST := 0
	skip := false // libjpeg's insufficient_data: blocks left zero to the next restart
	for i := 0; i < total; i++ {
		if ri > 0 && i > 0 && i%ri == 0 {
			ok, err := d.restart(&s, nextRST)
			if err != nil {
				return err
			}
			nextRST = (nextRST + 1) & 7
			if ok {
				// Otherwise libjpeg keeps its flag: an interval met
				// after a clean one is decoded from zero bits.
				skip = false
			}
			for _, c := range s.comps {
				c.pred = 0
			}
			d.eobrun = 0
		}
		mx, my := i%mcusX, i/mcusX
		if mx == 0 && d.ctx != nil {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		if mx == 0 && my > 0 {
			if err := d.streamRows(&s, my); err != nil {
				return err
			}
		}
		if skip {
			if d.progressive && ri == 0 {
				break // nothing more can change in this scan
			}
			if !d.progressive {
				d.greyMCU(&s, mx, my)
			}
			continue
		}
		d.lastGood = my // libjpeg's last_good_iMCU_row, for block smoothing
		if len(s.comps) == 1 {
			d.lastGood = my / s.comps[0].v
			d.block(&s, s.comps[0], mx, my)
		} else {
			for _, c := range s.comps {
				for by := 0; by < c.v; by++ {
					for bx := 0; bx < c.h; bx++ {
						d.block(&s, c, mx*c.h+bx, my*c.v+by)
					}
				}
			}
		}
		if d.arith {
			if d.ae.eof {
				return errJPEGTruncated
			}
		} else if d.br.starved() {
			if d.br.eof() {
				return errJPEGTruncated
			}
			skip = true
		}
	}
	d.pos = d.br.pos
	if d.arith {
		d.pos = d.ae.pos
	}
	return nil
}

// block decodes one block of component c at block column bx, row by.
func (d *jpegDecoder) block(s *scanHeader, c *jpegComp, bx, by int) {
	if d.arith {
		d.arithBlock(s, c, bx, by)
		return
	}
	br := &d.br
	if !d.progressive && d.scale > 1 {
		br.decodeBaseline(&d.blk, &d.huff[0][c.td], &d.huff[1][c.ta], c.q, &c.pred)
		d.scaledIDCT(c, bx, by)
		d.blk = [64]int32{}
		return
	}
	if !d.progressive {
		stride := c.bw * 8
		dst := c.plane[by*8*stride+bx*8:]
		if br.decodeBaseline(&d.blk, &d.huff[0][c.td], &d.huff[1][c.ta], c.q, &c.pred) {
			idct(&d.blk, dst, stride)
		} else {
			idctDC(d.blk[0], dst, stride)
		}
		d.blk = [64]int32{}
		return
	}
	off := (by*c.bw + bx) * 64
	blk := c.coef[off : off+64 : off+64]
	switch {
	case s.ss == 0 && s.ah == 0:
		br.dcFirst(blk, &d.huff[0][c.td], &c.pred, s.al)
	case s.ss == 0:
		br.dcRefine(blk, s.al)
	case s.ah == 0:
		br.acFirst(blk, &d.huff[1][c.ta], s.ss, s.se, s.al, &d.eobrun)
	default:
		br.acRefine(blk, &d.huff[1][c.ta], s.ss, s.se, s.al, &d.eobrun)
	}
}

// greyMCU writes the blocks of an MCU that libjpeg leaves zero (mid-grey)
// after running out of data in a segment.
func (d *jpegDecoder) greyMCU(s *scanHeader, mx, my int) {
	if len(s.comps) == 1 {
		d.greyBlock(s.comps[0], mx, my)
		return
	}
	for _, c := range s.comps {
		for by := 0; by < c.v; by++ {
			for bx := 0; bx < c.h; bx++ {
				d.greyBlock(c, mx*c.h+bx, my*c.v+by)
			}
		}
	}
}

// greyBlock writes a block that libjpeg leaves zero: mid-grey.
func (d *jpegDecoder) greyBlock(c *jpegComp, bx, by int) {
	if d.scale > 1 {
		d.scaledGrey(c, bx, by) // jpegscale.go
		return
	}
	stride := c.bw * 8
	idctDC(0, c.plane[by*8*stride+bx*8:], stride)
}

// output runs the IDCT of a progressive image, then upsamples and converts
// to RGB.
func (d *jpegDecoder) output() (image.Image, error) {
	smooth := d.smoothingOK()
	for i := range d.comps {
		c := &d.comps[i]
		if c.q == nil {
			// No scan named the component: libjpeg leaves its
			// coefficients zero, which is mid-grey.
			for j := range c.plane {
				c.plane[j] = 128
			}
			continue
		}
		if !d.progressive {
			continue
		}
		if smooth {
			d.smoothComponent(c)
			c.coef = nil
			continue
		}
		if d.scale > 1 {
			if err := d.scaledComponent(c); err != nil {
				return nil, err
			}
			c.coef = nil
			continue
		}
		stride := c.bw * 8
		for by := 0; by < c.bh; by++ {
			for bx := 0; bx < c.bw; bx++ {
				off := (by*c.bw + bx) * 64
				src := c.coef[off : off+64 : off+64]
				ac := false
				for k, v := range src {
					d.blk[k] = int32(v) * c.q[k]
					ac = ac || k > 0 && v != 0
				}
				dst := c.plane[by*8*stride+bx*8:]
				if ac {
					idct(&d.blk, dst, stride)
				} else {
					idctDC(d.blk[0], dst, stride)
				}
			}
		}
		c.coef = nil
	}
	if d.sink != nil {
		if d.stream != nil && d.nscans > 1 {
			d.stream.next = 0 // a later scan changed planes already given
		}
		return nil, d.emitRows(nil)
	}
	rgb := rgbOutput(d.ow * d.oh * 3)
	if err := d.convert(rgb); err != nil {
		return nil, err
	}
	return &packedRGB{Pix: rgb, W: d.ow, H: d.oh}, nil
}
