package preprocess

import (
	"context"
	"image"
)

// This file decodes a JPEG at 1/2, 1/4 or 1/8 of its size, for display
// (DecodeReduced), as libjpeg-turbo 2.1 does with scale_num = 1 and
// scale_denom = 2, 4 or 8 (djpeg -scale 1/N):
//   - the output is ceil(w/N) x ceil(h/N);
//   - each component's 8x8 blocks are inverse-transformed straight to 4x4,
//     2x2 or 1x1 samples (jidctred.c, the "islow" quantisation), and a
//     subsampled component is given a larger block where that makes its
//     samples as dense as the largest component's (jdmaster.c), so 4:2:0
//     chroma at 1/2 goes through the full 8x8 IDCT and needs no upsampling;
//   - what is still subsampled is upsampled as jdsample.c does, "fancy"
//     only while the smallest block is larger than 1x1;
//   - colour conversion, block smoothing and damaged-data handling are the
//     full-size decoder's.
// The entropy decoding is the full-size decoder's and costs the same: the
// saving is memory (planes and RGB at the reduced size) and IDCT work.

// jpegScales are the scale denominators libjpeg's reduced IDCTs give.
var jpegScales = [...]int{8, 4, 2}

// jpegScaleFor returns the largest scale denominator (8, 4 or 2) at which
// the longer side of a w x h image is still at least minSide, or 1 (full
// size) when none is or minSide <= 0.
func jpegScaleFor(w, h, minSide int) int {
	if minSide <= 0 {
		return 1
	}
	long := max(w, h)
	for _, n := range jpegScales {
		if ceilDiv(long, n) >= minSide {
			return n
		}
	}
	return 1
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// limitScale is the scale at which the pixel limit is checked: the output
// size for a sequential image decoded reduced, whose planes and RGB are all
// allocated at that size; the frame size otherwise (a progressive image
// keeps every coefficient of the full frame until its last scan).
func (d *jpegDecoder) limitScale(progressive bool) int {
	if progressive {
		return 1
	}
	return d.scale
}

// scaleComponent sets the block size and the sample extent of c for the
// decoder's scale: the smallest block (8/scale), doubled while the
// component stays no denser than the largest one (jdmaster.c,
// jpeg_calc_output_dimensions).
func (d *jpegDecoder) scaleComponent(c *jpegComp) {
	minBS := 8 / d.scale
	bs := minBS
	for bs < 8 && (d.hmax*minBS)%(c.h*bs*2) == 0 && (d.vmax*minBS)%(c.v*bs*2) == 0 {
		bs *= 2
	}
	c.bs = bs
	c.dw = ceilDiv(d.w*c.h*bs, d.hmax*8)
	c.dh = ceilDiv(d.h*c.v*bs, d.vmax*8)
}

// scaledIDCT writes the dequantized block d.blk (natural order) of
// component c at block (bx, by) into its plane at c.bs x c.bs samples.
func (d *jpegDecoder) scaledIDCT(c *jpegComp, bx, by int) {
	stride := c.bw * c.bs
	dst := c.plane[by*c.bs*stride+bx*c.bs:]
	switch c.bs {
	case 8:
		idct(&d.blk, dst, stride)
	case 4:
		idct4x4(&d.blk, dst, stride)
	case 2:
		idct2x2(&d.blk, dst, stride)
	default:
		dst[0] = idct1x1(d.blk[0])
	}
}

// scaledGrey writes a block that libjpeg leaves zero: mid-grey.
func (d *jpegDecoder) scaledGrey(c *jpegComp, bx, by int) {
	stride := c.bw * c.bs
	for y := 0; y < c.bs; y++ {
		row := c.plane[(by*c.bs+y)*stride+bx*c.bs:][:c.bs]
		for x := range row {
			row[x] = 128
		}
	}
}

// scaledComponent runs the reduced IDCT over every block of a progressive
// component's coefficients, checking d.ctx at each block row.
func (d *jpegDecoder) scaledComponent(c *jpegComp) error {
	for by := 0; by < c.bh; by++ {
		if d.ctx != nil {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		for bx := 0; bx < c.bw; bx++ {
			off := (by*c.bw + bx) * 64
			for k, v := range c.coef[off : off+64 : off+64] {
				d.blk[k] = int32(v) * c.q[k]
			}
			d.scaledIDCT(c, bx, by)
		}
	}
	return nil
}

// jidctred.c's constants: 13-bit fixed point.
const (
	fix0211164243 = 1730
	fix0509795579 = 4176
	fix0601344887 = 4926
	fix0720959822 = 5906
	fix0850430095 = 6967
	fix1061594337 = 8697
	fix1272758580 = 10426
	fix1451774981 = 11893
	fix2172734803 = 17799
	fix3624509785 = 29692
)

// descale is libjpeg's DESCALE: divide by 2^n, rounding half up.
func descale(v int32, n uint) int32 { return (v + 1<<(n-1)) >> n }

// idct4x4 is libjpeg's jpeg_idct_4x4: the 4x4 output of an 8x8 block
// (natural order, dequantized), columns then rows; column 4 and row 4 of
// the coefficients are not used.
func idct4x4(in *[64]int32, dst []byte, stride int) {
	var ws [32]int32 // [4 rows][8 columns]
	for c := 0; c < 8; c++ {
		if c == 4 {
			continue
		}
		if in[8+c] == 0 && in[16+c] == 0 && in[24+c] == 0 && in[40+c] == 0 && in[48+c] == 0 && in[56+c] == 0 {
			dc := in[c] << idctPass1Bits
			ws[c], ws[8+c], ws[16+c], ws[24+c] = dc, dc, dc, dc
			continue
		}
		t10, t12, t0, t2 := idct4Parts(in[c], in[16+c], in[48+c], in[56+c], in[40+c], in[24+c], in[8+c])
		const sh = idctConstBits - idctPass1Bits + 1
		ws[c] = descale(t10+t2, sh)
		ws[24+c] = descale(t10-t2, sh)
		ws[8+c] = descale(t12+t0, sh)
		ws[16+c] = descale(t12-t0, sh)
	}
	for r := 0; r < 4; r++ {
		w := ws[r*8 : r*8+8 : r*8+8]
		out := dst[r*stride : r*stride+4 : r*stride+4]
		if w[1] == 0 && w[2] == 0 && w[3] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0 {
			b := clampByte(descale(w[0], idctPass1Bits+3) + 128)
			out[0], out[1], out[2], out[3] = b, b, b, b
			continue
		}
		t10, t12, t0, t2 := idct4Parts(w[0], w[2], w[6], w[7], w[5], w[3], w[1])
		const sh = idctConstBits + idctPass1Bits + 3 + 1
		out[0] = clampByte(descale(t10+t2, sh) + 128)
		out[3] = clampByte(descale(t10-t2, sh) + 128)
		out[1] = clampByte(descale(t12+t0, sh) + 128)
		out[2] = clampByte(descale(t12-t0, sh) + 128)
	}
}

// idct4Parts is one 1-D pass of jpeg_idct_4x4 on the inputs at 0, 2, 6
// (even) and 7, 5, 3, 1 (odd).
func idct4Parts(x0, x2, x6, x7, x5, x3, x1 int32) (t10, t12, t0, t2 int32) {
	e0 := x0 << (idctConstBits + 1)
	e2 := x2*fix1847759065 - x6*fix0765366865
	t10, t12 = e0+e2, e0-e2
	t0 = -x7*fix0211164243 + x5*fix1451774981 - x3*fix2172734803 + x1*fix1061594337
	t2 = -x7*fix0509795579 - x5*fix0601344887 + x3*fix0899976223 + x1*fix2562915447
	return t10, t12, t0, t2
}

// idct2x2 is libjpeg's jpeg_idct_2x2: only coefficients 0, 1, 3, 5, 7 of
// each row and column count.
func idct2x2(in *[64]int32, dst []byte, stride int) {
	var ws [16]int32 // [2 rows][8 columns]
	for c := 0; c < 8; c++ {
		if c == 2 || c == 4 || c == 6 {
			continue
		}
		if in[8+c] == 0 && in[24+c] == 0 && in[40+c] == 0 && in[56+c] == 0 {
			dc := in[c] << idctPass1Bits
			ws[c], ws[8+c] = dc, dc
			continue
		}
		t10 := in[c] << (idctConstBits + 2)
		t0 := idct2Odd(in[56+c], in[40+c], in[24+c], in[8+c])
		const sh = idctConstBits - idctPass1Bits + 2
		ws[c] = descale(t10+t0, sh)
		ws[8+c] = descale(t10-t0, sh)
	}
	for r := 0; r < 2; r++ {
		w := ws[r*8 : r*8+8 : r*8+8]
		out := dst[r*stride : r*stride+2 : r*stride+2]
		if w[1] == 0 && w[3] == 0 && w[5] == 0 && w[7] == 0 {
			b := clampByte(descale(w[0], idctPass1Bits+3) + 128)
			out[0], out[1] = b, b
			continue
		}
		t10 := w[0] << (idctConstBits + 2)
		t0 := idct2Odd(w[7], w[5], w[3], w[1])
		const sh = idctConstBits + idctPass1Bits + 3 + 2
		out[0] = clampByte(descale(t10+t0, sh) + 128)
		out[1] = clampByte(descale(t10-t0, sh) + 128)
	}
}

// idct2Odd is the odd part of jpeg_idct_2x2, summed in libjpeg's order.
func idct2Odd(x7, x5, x3, x1 int32) int32 {
	t := x7 * -fix0720959822
	t += x5 * fix0850430095
	t += x3 * -fix1272758580
	t += x1 * fix3624509785
	return t
}

// idct1x1 is libjpeg's jpeg_idct_1x1: the block's mean from its DC.
func idct1x1(dc int32) byte { return clampByte(descale(dc, 3) + 128) }

// decodeJPEGReduced decodes a JPEG at the smallest libjpeg scale whose
// longer side is still at least minSide (full size when the image is not
// that large), checking ctx at every MCU row. The pixel limit applies as
// memoryPixels says.
func decodeJPEGReduced(ctx context.Context, data []byte, name string, maxPixels int64, minSide int) (image.Image, error) {
	img, err := safely(func() (image.Image, error) {
		d := &jpegDecoder{data: data, maxPixels: maxPixels, minSide: max(minSide, 1), ctx: ctx}
		return d.decode()
	})
	if err != nil {
		return nil, jpegError(name, err, maxPixels)
	}
	return img, nil
}
