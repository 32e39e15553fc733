package preprocess

import "math"

// This file is section 3 of preprocess-spec.md: torch's uint8 antialiased
// bicubic (align_corners=False), done as two separable 1-D passes with an
// 8-bit intermediate, horizontal first, each with int16 fixed-point weights
// and its own precision. Images are packed RGB: [h, w, 3] uint8.

// pass holds the quantised taps of one 1-D resampling pass from in to out
// samples.
type pass struct {
	in, out int
	lo      int     // first output held; start, size and w begin there
	prec    uint    // fixed-point fraction bits of w
	k       int     // row stride of w (upper bound on taps per output)
	start   []int32 // [hi-lo] first input index of each output's taps
	size    []int32 // [hi-lo] number of taps
	w       []int32 // [hi-lo, k] int16 weights, widened to int32
}

// cubic is the Keys kernel with a = -0.5, evaluated left to right as torch's
// cubic_convolution1/2 do ((... * t) * t, not t²). The float64() conversions forbid fused multiply-adds, which would
// change the last bit of a weight on FMA-capable builds.
func cubic(x float64) float64 {
	const a = -0.5
	t := math.Abs(x)
	switch {
	case t < 1:
		return float64(float64(float64(float64((a+2)*t)-(a+3))*t)*t) + 1
	case t < 2:
		return float64(float64(float64(float64(float64(a*t)-5*a)*t)+8*a)*t) - 4*a
	}
	return 0
}

// newPass computes the quantised weights of outputs lo..hi-1 of a pass. The
// precision depends on the largest weight of the whole pass, as in torch,
// so every output's weights are computed once for it, without being kept.
func newPass(in, out, lo, hi int) *pass {
	scale := float64(in) / float64(out)
	support, invscale := 2.0, 1.0
	if scale >= 1 {
		support, invscale = 2*scale, 1/scale
	}
	k := int(math.Ceil(support))*2 + 1
	p := &pass{in: in, out: out, lo: lo, k: k,
		start: make([]int32, hi-lo), size: make([]int32, hi-lo), w: make([]int32, (hi-lo)*k)}
	ws := make([]float64, k)
	// weights fills ws with the normalised float64 weights of output i.
	weights := func(i int) (xmin int64, n int) {
		center := float64(scale * (float64(i) + 0.5))
		xmin = max(int64(float64(center-support)+0.5), 0)
		xsize := min(int64(float64(center+support)+0.5), int64(in)) - xmin
		xsize = min(max(xsize, 0), int64(k))
		total := 0.0
		for j := range ws[:xsize] {
			ws[j] = cubic(float64(float64(float64(xmin+int64(j))-center)+0.5) * invscale)
			total += ws[j]
		}
		if total != 0 {
			for j := range ws[:xsize] {
				ws[j] /= total
			}
		}
		return xmin, int(xsize)
	}
	wmax := 0.0
	for i := 0; i < out; i++ {
		_, n := weights(i)
		for _, v := range ws[:n] {
			wmax = max(wmax, v)
		}
	}
	p.prec = 22
	for q := uint(0); q < 22; q++ {
		if int64(0.5+wmax*float64(int64(1)<<(q+1))) >= 1<<15 {
			p.prec = q
			break
		}
	}
	one := float64(int64(1) << p.prec)
	for i := lo; i < hi; i++ {
		xmin, n := weights(i)
		q := p.w[(i-lo)*k:]
		for j, v := range ws[:n] {
			v *= one
			if v < 0 {
				q[j] = int32(int16(v - 0.5))
			} else {
				q[j] = int32(int16(v + 0.5))
			}
		}
		// Taps whose weight rounds to 0 add nothing: drop them from the
		// ends (exactly equivalent, and a little less work).
		for n > 0 && q[n-1] == 0 {
			n--
		}
		skip := 0
		for skip < n && q[skip] == 0 {
			skip++
		}
		copy(q, q[skip:n])
		p.start[i-lo], p.size[i-lo] = int32(xmin)+int32(skip), int32(n-skip)
	}
	return p
}

// taps returns the input range and weights of output i.
func (p *pass) taps(i int) (start int, w []int32) {
	i -= p.lo
	n := int(p.size[i])
	return int(p.start[i]), p.w[i*p.k : i*p.k+n : i*p.k+n]
}

// clamp8 converts a fixed-point accumulator to a uint8 sample: arithmetic
// shift, then clamp to 0..255.
func clamp8(acc int32, prec uint) byte {
	v := acc >> prec
	if uint32(v) > 255 {
		if v < 0 {
			return 0
		}
		return 255
	}
	return byte(v)
}

// hpassRows resamples two packed-RGB rows src0 and src1 along their length
// into dst0 and dst1, computing only outputs c0..c1-1 (each dst holds
// (c1-c0)*3 bytes). Each output depends only on its own taps, so a subset
// equals the same outputs of the full pass.
//
// The two rows share one 64-bit multiply per channel and tap: the samples
// are packed as row0 | row1<<32 into buf (3 values per pixel), and since
// every partial sum of a row fits in 32 bits (|sum| < 255 * sum|q| < 2^31),
// the low half of the 64-bit accumulator is row 0's exact sum and the rest,
// once that is subtracted, row 1's. The integer result is the same as two
// separate int32 passes; it only takes a third fewer instructions.
func hpassRows(dst0, dst1, src0, src1 []byte, p *pass, c0, c1 int, buf []uint64) {
	n := len(src0) / 3
	buf = buf[:3*n]
	src0, src1 = src0[:3*n], src1[:3*n]
	for i := range buf {
		buf[i] = uint64(src0[i]) | uint64(src1[i])<<32
	}
	half := int64(1) << (p.prec - 1)
	init := half | half<<32
	prec := p.prec
	dst0, dst1 = dst0[:(c1-c0)*3], dst1[:(c1-c0)*3]
	for c := c0; c < c1; c++ {
		start, w := p.taps(c)
		s := buf[start*3 : (start+len(w))*3]
		r, g, b := init, init, init
		for j, q := range w {
			px := s[j*3 : j*3+3 : j*3+3]
			q := int64(q)
			r += int64(px[0]) * q
			g += int64(px[1]) * q
			b += int64(px[2]) * q
		}
		i := (c - c0) * 3
		r0, g0, b0 := int32(r), int32(g), int32(b)
		o := dst0[i : i+3 : i+3]
		o[0], o[1], o[2] = clamp8(r0, prec), clamp8(g0, prec), clamp8(b0, prec)
		o = dst1[i : i+3 : i+3]
		o[0] = clamp8(int32((r-int64(r0))>>32), prec)
		o[1] = clamp8(int32((g-int64(g0))>>32), prec)
		o[2] = clamp8(int32((b-int64(b0))>>32), prec)
	}
}

// vpassRow computes output row r of a vertical pass: the weighted sum of
// rows of src (row y starts at (y-rowBase)*stride+off, n bytes long) into
// dst[:n]. acc is scratch of at least n values.
func vpassRow(dst, src []byte, stride, off, rowBase int, p *pass, r int, acc []int32) {
	n := len(dst)
	acc = acc[:n]
	half := int32(1) << (p.prec - 1)
	for i := range acc {
		acc[i] = half
	}
	start, w := p.taps(r)
	for j, q := range w {
		o := (start+j-rowBase)*stride + off
		row := src[o : o+n]
		for i, v := range row {
			acc[i] += int32(v) * q
		}
	}
	for i, a := range acc {
		dst[i] = clamp8(a, p.prec)
	}
}

// geometry describes one image's way through resize and crop: the source
// size, the resized size and where the output window sits in the resized
// image (output (x, y) is resized (x+offX, y+offY); outside it is zero).
type geometry struct {
	w, h       int // source
	rw, rh     int // resized
	cw, ch     int // output
	offX, offY int
}

// window returns the output window's columns x0..x1-1 and rows y0..y1-1
// that hold resized pixels (the rest is padding); empty when none do.
func (g geometry) window() (x0, x1, y0, y1 int) {
	return max(0, -g.offX), min(g.cw, g.rw-g.offX), max(0, -g.offY), min(g.ch, g.rh-g.offY)
}

// shortestEdgeSize is section 2 of the spec: Python's
// int(size * long / short), with W <= H giving a portrait result.
func shortestEdgeSize(w, h, size int) (rw, rh int) {
	short, long := min(w, h), max(w, h)
	newLong := int(float64(size*long) / float64(short))
	if w <= h {
		return size, newLong
	}
	return newLong, size
}

// cropOffset is section 4: floor of half the excess, or minus the left/top
// zero padding when the crop is larger than the image.
func cropOffset(size, crop int) int {
	if crop > size {
		return -((crop - size) / 2)
	}
	return (size - crop) / 2
}

// resizeCrop resamples the packed-RGB src (g.w x g.h) to g.rw x g.rh and
// writes the output window into dst (packed RGB, g.cw x g.ch). Only the
// resized rows and columns inside the window are computed, and only the
// source rows they need. scratch is reused across calls when large enough;
// the possibly grown scratch is returned.
func resizeCrop(dst, src []byte, g geometry, scratch []byte) []byte {
	r := newResizer(g, scratch, src)
	if r.wants() {
		for y := r.in0; y < r.in1; y++ {
			r.row(y, src[y*g.w*3:(y+1)*g.w*3])
		}
	}
	return r.finish(dst)
}

// resizer is resizeCrop for rows that arrive one at a time, as a JPEG
// decode converts them (jpegRows), so that no whole RGB image is kept: the
// horizontal pass runs on each source row as it comes, into an
// intermediate of the rows the vertical pass reads, and finish runs the
// vertical pass. Rows may come in any order and again; a row given twice
// is resampled again and the later one counts.
type resizer struct {
	g              geometry
	x0, x1, y0, y1 int // output window columns and rows holding resized pixels
	c0, c1, r0, r1 int // resized columns and rows kept
	hp, vp         *pass
	in0, in1       int // source rows the vertical pass reads
	// The intermediate: rows in0..in1-1, columns c0..c1-1 of the
	// horizontally resized image, as (buf, stride, off, rowBase).
	buf                  []byte
	stride, off, rowBase int
	scratch              []byte
	planar               *hpassPlanar // hpassSIMD
	packed               []uint64     // hpassRows' buffer
	pend                 []byte       // hpassRows: a row waiting for its pair
	pendY                int          // its index, -1 when none
}

// newResizer prepares the resize of geometry g. whole, when not nil, is
// the whole source image: a resize with no horizontal pass then reads it
// in place, and no row need be given.
func newResizer(g geometry, scratch, whole []byte) *resizer {
	r := &resizer{g: g, scratch: scratch, pendY: -1}
	r.x0, r.x1, r.y0, r.y1 = g.window()
	if !r.wants() {
		return r
	}
	r.c0, r.c1 = r.x0+g.offX, r.x1+g.offX
	r.r0, r.r1 = r.y0+g.offY, r.y1+g.offY
	if g.rw != g.w {
		r.hp = newPass(g.w, g.rw, r.c0, r.c1)
	}
	if g.rh != g.h {
		r.vp = newPass(g.h, g.rh, r.r0, r.r1)
	}
	r.in0, r.in1 = r.r0, r.r1
	if r.vp != nil {
		r.in0, r.in1 = g.h, 0
		for y := r.r0; y < r.r1; y++ {
			start, w := r.vp.taps(y)
			r.in0, r.in1 = min(r.in0, start), max(r.in1, start+len(w))
		}
		r.in1 = max(r.in0, r.in1)
	}
	if r.hp == nil && whole != nil {
		r.buf, r.stride, r.off = whole, g.w*3, r.c0*3
		r.in0, r.in1 = 0, 0 // nothing to give
		return r
	}
	r.stride, r.rowBase = (r.c1-r.c0)*3, r.in0
	need := (r.in1 - r.in0) * r.stride
	if cap(r.scratch) < need {
		r.scratch = make([]byte, need)
	}
	r.buf = r.scratch[:need]
	if r.hp != nil {
		if hpassSIMD && r.hp.prec > 0 && !hpassScalar {
			r.planar = newHpassPlanar(r.hp, g.w)
		} else {
			r.packed = make([]uint64, 3*g.w)
			r.pend = make([]byte, g.w*3)
		}
	}
	return r
}

// wants reports whether the output window holds any resized pixel (if
// not, no row is needed and finish only clears dst).
func (r *resizer) wants() bool { return r.x0 < r.x1 && r.y0 < r.y1 }

// out returns intermediate row y.
func (r *resizer) out(y int) []byte {
	return r.buf[(y-r.in0)*r.stride : (y-r.in0+1)*r.stride]
}

// row takes source row y (g.w packed-RGB pixels); rows the vertical pass
// does not read are ignored. src is not kept.
func (r *resizer) row(y int, src []byte) {
	if y < r.in0 || y >= r.in1 {
		return
	}
	switch {
	case r.hp == nil:
		copy(r.out(y), src[r.c0*3:r.c1*3])
	case r.planar != nil:
		r.planar.row(r.out(y), src)
	case r.pendY >= 0 && r.pendY == y-1:
		// hpassRows resamples two rows at once.
		hpassRows(r.out(y-1), r.out(y), r.pend, src, r.hp, r.c0, r.c1, r.packed)
		r.pendY = -1
	default:
		r.flushPending()
		copy(r.pend, src)
		r.pendY = y
	}
}

// flushPending resamples a row left waiting for its pair, with itself.
func (r *resizer) flushPending() {
	if r.pendY < 0 {
		return
	}
	spare := make([]byte, r.stride)
	hpassRows(r.out(r.pendY), spare, r.pend, r.pend, r.hp, r.c0, r.c1, r.packed)
	r.pendY = -1
}

// finish runs the vertical pass into dst (packed RGB, g.cw x g.ch) and
// returns the scratch buffer for the next resize.
func (r *resizer) finish(dst []byte) []byte {
	if r.x0 > 0 || r.y0 > 0 || r.x1 < r.g.cw || r.y1 < r.g.ch {
		clear(dst)
	}
	if !r.wants() {
		return r.scratch
	}
	r.flushPending()
	g := r.g
	n := (r.c1 - r.c0) * 3
	var acc []int32
	if r.vp != nil {
		acc = make([]int32, n)
	}
	for y := r.r0; y < r.r1; y++ {
		o := (y-g.offY)*g.cw*3 + r.x0*3
		d := dst[o : o+n]
		if r.vp != nil {
			vpassRow(d, r.buf, r.stride, r.off, r.rowBase, r.vp, y, acc)
		} else {
			s := (y-r.rowBase)*r.stride + r.off
			copy(d, r.buf[s:s+n])
		}
	}
	return r.scratch
}

// hpassPlanar is hpassRows one row at a time in SIMD where the CPU has it
// (hpassSIMD): it splits each source row into R, G and B planes, then sums
// each output's taps plane by plane, 16 at a time. The resize of a 12 MP
// photo to its 224x224 window took 12.7 ms of CPU instead of 41.8
// (BenchmarkResize12MP/simd and /scalar, AMD Zen 5, 2026-12-03).
type hpassPlanar struct {
	p      *pass
	kw     int     // taps per output, rounded up to 16
	w      []int16 // [outputs][kw], zero past each output's own taps
	planes []byte  // R, G, B planes of one row, pstride apart
	pstr   int
}

// newHpassPlanar prepares p's outputs for hpassPlanarAVX2 on rows of w
// pixels.
func newHpassPlanar(p *pass, w int) *hpassPlanar {
	n := len(p.start)
	maxTaps := 0
	for _, s := range p.size {
		maxTaps = max(maxTaps, int(s))
	}
	kw := max(16, (maxTaps+15)&^15)
	h := &hpassPlanar{p: p, kw: kw, w: make([]int16, n*kw), pstr: (w + kw + 63) &^ 63}
	for i := range n {
		_, ws := p.taps(p.lo + i)
		for t, q := range ws {
			h.w[i*kw+t] = int16(q)
		}
	}
	// Each plane has kw bytes of slack: an output's last 16-tap block may
	// read past the row (weights zero there).
	h.planes = make([]byte, 3*h.pstr)
	return h
}

// row resamples one packed-RGB row src (w pixels) into dst (outputs
// c0..c1-1 of the pass, 3 bytes each).
func (h *hpassPlanar) row(dst, src []byte) {
	n := len(src) / 3
	r, g, b := h.planes[:n], h.planes[h.pstr:h.pstr+n], h.planes[2*h.pstr:2*h.pstr+n]
	v := n &^ 15
	if v > 0 {
		deinterleaveRGB(&r[0], &g[0], &b[0], &src[0], v)
	}
	for x := v; x < n; x++ {
		r[x], g[x], b[x] = src[3*x], src[3*x+1], src[3*x+2]
	}
	outs := len(h.p.start)
	_ = dst[3*outs-1]
	hpassPlanarAVX2(&dst[0], &h.planes[0], h.pstr, &h.p.start[0], &h.w[0], h.kw, outs, h.p.prec)
}

// hpassScalar forces hpassRows where hpassPlanar would run (tests and
// benchmarks compare the two).
var hpassScalar = false
