package preprocess

import (
	"fmt"
	"image"
)

// This file turns JPEG planes into RGB the way libjpeg-turbo does by
// default, which is what Pillow, and so Hugging Face, sees: "fancy"
// (triangle-filter) chroma upsampling, then the jdcolor.c fixed-point
// matrix. The JPEG decoder (jpeg.go) goes through convert, which follows
// jdsample.c for every sampling layout; jpegToRGB does the same for an
// *image.YCbCr handed to Processor.Image, whose planes come from elsewhere.

// libjpeg's YCbCr-to-RGB tables (jdcolor.c): 16-bit fixed point, x = i-128.
var jpegTables = func() (t struct{ crR, cbB, crG, cbG [256]int32 }) {
	const half = 1 << 15
	for i := range 256 {
		x := int32(i - 128)
		t.crR[i] = (91881*x + half) >> 16  // 1.40200
		t.cbB[i] = (116130*x + half) >> 16 // 1.77200
		t.crG[i] = -46802 * x              // 0.71414
		t.cbG[i] = -22554*x + half         // 0.34414, with the rounding
	}
	return t
}()

func clampByte(v int32) byte {
	if uint32(v) > 255 {
		if v < 0 {
			return 0
		}
		return 255
	}
	return byte(v)
}

// jpegRowGeneric converts one row of luma and full-width chroma to packed
// RGB: the reference for jpegRow's SIMD (jpegsimd_*.go).
func jpegRowGeneric(dst, y, cb, cr []byte) {
	t := &jpegTables
	cb, cr = cb[:len(y)], cr[:len(y)]
	dst = dst[:3*len(y)]
	for x, yy := range y {
		Y := int32(yy)
		d := dst[x*3 : x*3+3 : x*3+3]
		d[0] = clampByte(Y + t.crR[cr[x]])
		d[1] = clampByte(Y + (t.cbG[cb[x]]+t.crG[cr[x]])>>16)
		d[2] = clampByte(Y + t.cbB[cb[x]])
	}
}

// jpegToRGB converts a decoded JPEG's YCbCr image to packed RGB in out. It
// returns false, leaving out alone, for layouts libjpeg would not fancy-
// upsample (4:1:1, 4:1:0, chroma at most 2 samples wide for horizontal
// subsampling) or for a sub-image not at the origin, where the chroma phase
// is unknown.
func jpegToRGB(out []byte, m *image.YCbCr) bool {
	r := m.Rect
	if r.Min != (image.Point{}) {
		return false
	}
	w, h := r.Dx(), r.Dy()
	var hs, vs bool
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
	case image.YCbCrSubsampleRatio422:
		hs = true
	case image.YCbCrSubsampleRatio420:
		hs, vs = true, true
	case image.YCbCrSubsampleRatio440:
		vs = true
	default:
		return false
	}
	cw, ch := w, h // chroma samples libjpeg works with (downsampled_width/height)
	if hs {
		cw = (w + 1) / 2
		if cw <= 2 {
			return false
		}
	}
	if vs {
		ch = (h + 1) / 2
	}
	cbRow := make([]byte, 2*cw)
	crRow := make([]byte, 2*cw)
	cbSum := make([]int32, cw)
	crSum := make([]int32, cw)
	for y := 0; y < h; y++ {
		yrow := m.Y[y*m.YStride:][:w]
		var cb, cr []byte
		switch {
		case !hs && !vs:
			cb, cr = m.Cb[y*m.CStride:][:w], m.Cr[y*m.CStride:][:w]
		case hs && !vs: // 4:2:2
			o := y * m.CStride
			h2v1(cbRow, m.Cb[o:o+cw])
			h2v1(crRow, m.Cr[o:o+cw])
			cb, cr = cbRow, crRow
		default: // 4:2:0 and 4:4:0: blend the nearest chroma row 3:1 with the next nearest
			cy, far := y/2, y/2-1
			if y%2 == 1 {
				far = y/2 + 1
			}
			far = min(max(far, 0), ch-1) // libjpeg repeats the edge rows
			nb, fb := m.Cb[cy*m.CStride:][:cw], m.Cb[far*m.CStride:][:cw]
			nr, fr := m.Cr[cy*m.CStride:][:cw], m.Cr[far*m.CStride:][:cw]
			for i := range cbSum {
				cbSum[i] = 3*int32(nb[i]) + int32(fb[i])
				crSum[i] = 3*int32(nr[i]) + int32(fr[i])
			}
			if hs {
				h2v2(cbRow, cbSum)
				h2v2(crRow, crSum)
			} else {
				bias := int32(1 + y%2) // h1v2: 1 on the upper row of a pair, 2 on the lower
				for i := range cbSum {
					cbRow[i] = byte((cbSum[i] + bias) >> 2)
					crRow[i] = byte((crSum[i] + bias) >> 2)
				}
			}
			cb, cr = cbRow, crRow
		}
		jpegRow(out[y*w*3:(y+1)*w*3], yrow, cb, cr)
	}
	return true
}

// h2v1 doubles a chroma row horizontally with libjpeg's 3:1 triangle
// filter and its alternating rounding; len(in) > 2.
func h2v1(out, in []byte) {
	n := len(in)
	out = out[:2*n]
	out[0] = in[0]
	out[1] = byte((3*int32(in[0]) + int32(in[1]) + 2) >> 2)
	for i := 1; i < n-1; i++ {
		v := 3 * int32(in[i])
		out[2*i] = byte((v + int32(in[i-1]) + 1) >> 2)
		out[2*i+1] = byte((v + int32(in[i+1]) + 2) >> 2)
	}
	out[2*n-2] = byte((3*int32(in[n-1]) + int32(in[n-2]) + 1) >> 2)
	out[2*n-1] = in[n-1]
}

// h2v2 doubles a row of vertical 3:1 sums (each 4x a sample) horizontally:
// the second stage of libjpeg's h2v2 fancy upsampling; len(sum) > 2.
func h2v2(out []byte, sum []int32) {
	n := len(sum)
	out = out[:2*n]
	out[0] = byte((4*sum[0] + 8) >> 4)
	out[1] = byte((3*sum[0] + sum[1] + 7) >> 4)
	for i := 1; i < n-1; i++ {
		v := 3 * sum[i]
		out[2*i] = byte((v + sum[i-1] + 8) >> 4)
		out[2*i+1] = byte((v + sum[i+1] + 7) >> 4)
	}
	out[2*n-2] = byte((3*sum[n-1] + sum[n-2] + 8) >> 4)
	out[2*n-1] = byte((4*sum[n-1] + 7) >> 4)
}

// h2v2RowGeneric is libjpeg's h2v2 fancy upsampling of one output row:
// near is the nearest chroma row, far the next nearest, sum scratch of
// len(near); the reference for h2v2Row's SIMD (jpegsimd_*.go).
func h2v2RowGeneric(out, near, far []byte, sum []int32) {
	sum = sum[:len(near)]
	far = far[:len(near)]
	for x := range sum {
		sum[x] = 3*int32(near[x]) + int32(far[x])
	}
	h2v2(out, sum)
}

// JPEG colour spaces, chosen from the markers and component ids as
// libjpeg-turbo's default_decompress_parms does.
const (
	jcsGray = iota
	jcsYCbCr
	jcsRGB
	jcsCMYK
	jcsYCCK
)

func (d *jpegDecoder) colorSpace() int {
	switch len(d.comps) {
	case 1:
		return jcsGray
	case 3:
		switch {
		case d.jfif:
			return jcsYCbCr
		case d.adobe:
			if d.adobeTransform == 0 {
				return jcsRGB
			}
			return jcsYCbCr
		case d.comps[0].id == 'R' && d.comps[1].id == 'G' && d.comps[2].id == 'B':
			return jcsRGB
		}
		return jcsYCbCr
	}
	if d.adobe && d.adobeTransform != 0 {
		return jcsYCCK
	}
	return jcsCMYK
}

// Upsampling methods of libjpeg-turbo's jdsample.c, chosen per component
// from its sampling factors and scaled block size relative to the largest
// ones (jpegscale.go: a reduced decode may scale chroma up in its IDCT).
const (
	upFull      = iota
	upH2V1      // triangle filter across
	upH1V2      // triangle filter down
	upH2V2      // triangle filter both ways
	upReplicate // int_upsample, h2v1_upsample, h2v2_upsample
)

// upsampler gives one component's rows at full resolution.
type upsampler struct {
	c          *jpegComp
	method     int
	hexp, vexp int
	w          int
	out        []byte
	sum        []int32
}

// newUpsampler prepares component c for output rows w samples wide; minBS
// is the smallest block size of the frame's components (8 unless scaled).
// As in libjpeg, 1x1 blocks turn fancy upsampling off.
func newUpsampler(a *jpegArena, i int, c *jpegComp, hmax, vmax, minBS, w int) (*upsampler, error) {
	u := &upsampler{c: c, w: w}
	hout, vout, hin, vin := hmax*minBS, vmax*minBS, c.h*c.bs, c.v*c.bs
	if hout%hin != 0 || vout%vin != 0 {
		return nil, fmt.Errorf("%w: fractional sampling %dx%d in %dx%d", ErrUnsupported, c.h, c.v, hmax, vmax)
	}
	u.hexp, u.vexp = hout/hin, vout/vin
	fancy := minBS > 1
	switch {
	case u.hexp == 1 && u.vexp == 1:
		u.method = upFull
	case u.hexp == 2 && u.vexp == 1 && c.dw > 2 && fancy:
		u.method = upH2V1
	case u.hexp == 1 && u.vexp == 2 && fancy:
		u.method = upH1V2
	case u.hexp == 2 && u.vexp == 2 && c.dw > 2 && fancy:
		u.method = upH2V2
		a.sums[i] = grow(a.sums[i], c.dw)
		u.sum = a.sums[i]
	default:
		u.method = upReplicate
	}
	a.outs[i] = grow(a.outs[i], max(w, 2*c.dw))
	u.out = a.outs[i]
	return u, nil
}

// row returns output row y (at least w samples).
func (u *upsampler) row(y int) []byte {
	c := u.c
	stride := c.bw * c.bs
	plane := func(r int) []byte { return c.plane[r*stride : r*stride+stride] }
	switch u.method {
	case upFull:
		return plane(y)[:u.w]
	case upH2V1:
		h2v1(u.out, plane(y)[:c.dw])
		return u.out
	case upH1V2, upH2V2:
		cy, far, bias := y/2, y/2-1, int32(1)
		if y%2 == 1 {
			far, bias = y/2+1, 2
		}
		far = min(max(far, 0), c.dh-1) // libjpeg repeats the edge rows
		near, next := plane(cy)[:c.dw], plane(far)[:c.dw]
		if u.method == upH1V2 {
			out := u.out[:c.dw]
			for x := range out {
				out[x] = byte((3*int32(near[x]) + int32(next[x]) + bias) >> 2)
			}
			return u.out
		}
		h2v2Row(u.out, near, next, u.sum)
		return u.out
	}
	src := plane(y / u.vexp)
	out := u.out[:u.w]
	if u.hexp == 1 {
		copy(out, src)
		return u.out
	}
	for x := range out {
		out[x] = src[x/u.hexp]
	}
	return u.out
}

// convert upsamples the decoded planes and converts them to packed RGB as
// Pillow's convert("RGB") gives them: YCbCr with libjpeg's tables, RGB as
// is, grey copied to the three channels, CMYK and YCCK through Pillow's
// inverted ("CMYK;I") Adobe convention and its cmyk2rgb.
func (d *jpegDecoder) convert(rgb []byte) error {
	cv, err := d.newConverter()
	if err != nil {
		return err
	}
	w := d.ow
	for y := 0; y < d.oh; y++ {
		cv.row(y, rgb[y*w*3:(y+1)*w*3])
	}
	return nil
}

// converter turns the decoded planes into packed RGB one output row at a
// time, in any order.
type converter struct {
	d   *jpegDecoder
	ups []*upsampler
	cs  int
}

func (d *jpegDecoder) newConverter() (*converter, error) {
	minBS := 8
	for i := range d.comps {
		minBS = min(minBS, d.comps[i].bs)
	}
	cv := &converter{d: d, ups: make([]*upsampler, len(d.comps)), cs: d.colorSpace()}
	for i := range d.comps {
		u, err := newUpsampler(d.arena, i, &d.comps[i], d.hmax, d.vmax, minBS, d.ow)
		if err != nil {
			return nil, err
		}
		cv.ups[i] = u
	}
	return cv, nil
}

// lastRow returns the last plane row of its component that output row y
// reads.
func (u *upsampler) lastRow(y int) int {
	switch u.method {
	case upFull, upH2V1:
		return y
	case upH1V2, upH2V2:
		if y%2 == 1 {
			return min(y/2+1, u.c.dh-1)
		}
		return y / 2
	}
	return y / u.vexp
}

// ready returns how many output rows from the top can be converted when
// each component's planes hold their first done[i] rows.
func (cv *converter) ready(from int, done []int) int {
	y := from
	for ; y < cv.d.oh; y++ {
		for i, u := range cv.ups {
			if u.lastRow(y) >= done[i] {
				return y
			}
		}
	}
	return y
}

// row converts output row y into dst (ow packed-RGB pixels).
func (cv *converter) row(y int, dst []byte) {
	var rows [4][]byte
	w := cv.d.ow
	for i, u := range cv.ups {
		rows[i] = u.row(y)[:w]
	}
	t := &jpegTables
	switch cv.cs {
	case jcsGray:
		for x, v := range rows[0] {
			p := dst[x*3 : x*3+3 : x*3+3]
			p[0], p[1], p[2] = v, v, v
		}
	case jcsYCbCr:
		jpegRow(dst, rows[0], rows[1], rows[2])
	case jcsRGB:
		r, g, b := rows[0], rows[1], rows[2]
		for x := range r {
			p := dst[x*3 : x*3+3 : x*3+3]
			p[0], p[1], p[2] = r[x], g[x], b[x]
		}
	case jcsCMYK:
		c, m, ye, k := rows[0], rows[1], rows[2], rows[3]
		for x := range c {
			p := dst[x*3 : x*3+3 : x*3+3]
			kk := 255 - k[x]
			p[0], p[1], p[2] = cmykToRGB(255-c[x], kk), cmykToRGB(255-m[x], kk), cmykToRGB(255-ye[x], kk)
		}
	case jcsYCCK:
		yy, cb, cr, k := rows[0], rows[1], rows[2], rows[3]
		for x := range yy {
			p := dst[x*3 : x*3+3 : x*3+3]
			Y := int32(yy[x])
			kk := 255 - k[x]
			p[0] = cmykToRGB(clampByte(Y+t.crR[cr[x]]), kk)
			p[1] = cmykToRGB(clampByte(Y+(t.cbG[cb[x]]+t.crG[cr[x]])>>16), kk)
			p[2] = cmykToRGB(clampByte(Y+t.cbB[cb[x]]), kk)
		}
	}
}
