package preprocess

import (
	"image"
	"image/color"
)

// This file is section 1 of preprocess-spec.md: every decoded image becomes
// packed 8-bit RGB, [h, w, 3], the way Pillow's convert("RGB") does it.
// Alpha is dropped without compositing, so the straight (non-premultiplied)
// colour is read from NRGBA pixels directly. The common concrete types have
// loops of their own; anything else goes through color.NRGBAModel.

// yccRange tells which YCbCr-to-RGB conversion an image.YCbCr needs: JPEG
// (JFIF, full 0..255 range, converted as libjpeg does) or WebP's VP8 (BT.601
// limited range, as libwebp does).
type yccRange uint8

const (
	yccJFIF yccRange = iota
	yccBT601
)

// yccFor returns the YCbCr conversion for images decoded from format f.
func yccFor(f format) yccRange {
	if f == fmtWebP {
		return yccBT601
	}
	return yccJFIF
}

// rgbBuffer returns buf resized to n bytes, reallocating when too small.
func rgbBuffer(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, n)
	}
	return buf[:n]
}

// toRGB converts img to packed RGB in buf (grown as needed) and returns it
// with the image's width and height.
func toRGB(buf []byte, img image.Image, ycc yccRange) (out []byte, w, h int) {
	b := img.Bounds()
	w, h = b.Dx(), b.Dy()
	if m, ok := img.(*packedRGB); ok {
		return m.Pix, w, h // the JPEG decoder's output is already what Pillow gives
	}
	out = rgbBuffer(buf, w*h*3)
	if w == 0 || h == 0 {
		return out, w, h
	}
	switch m := img.(type) {
	case *image.YCbCr:
		fancyOrNearest(out, m, ycc)
	case *image.NYCbCrA:
		fancyOrNearest(out, &m.YCbCr, ycc)
	case *image.Gray:
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x, v := range src {
				d := dst[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = v, v, v
			}
		}
	case *image.Gray16:
		// The high byte: a deliberate exception to Pillow, which clips
		// 16-bit grayscale at 255 and turns real photos white.
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:2*w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				v := src[2*x]
				d := dst[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = v, v, v
			}
		}
	case *image.NRGBA:
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				s := src[x*4 : x*4+3 : x*4+3]
				d := dst[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = s[0], s[1], s[2]
			}
		}
	case *image.NRGBA64:
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:8*w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				s := src[x*8 : x*8+8 : x*8+8]
				d := dst[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = s[0], s[2], s[4]
			}
		}
	case *image.RGBA:
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				s := src[x*4 : x*4+4 : x*4+4]
				d := dst[x*3 : x*3+3 : x*3+3]
				if a := s[3]; a == 255 {
					d[0], d[1], d[2] = s[0], s[1], s[2]
				} else {
					d[0], d[1], d[2] = unpremul(s[0], a), unpremul(s[1], a), unpremul(s[2], a)
				}
			}
		}
	case *image.RGBA64:
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:8*w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				s := src[x*8 : x*8+8 : x*8+8]
				d := dst[x*3 : x*3+3 : x*3+3]
				if s[6] == 0xff && s[7] == 0xff {
					d[0], d[1], d[2] = s[0], s[2], s[4]
				} else {
					c := color.NRGBA64Model.Convert(color.RGBA64{
						R: uint16(s[0])<<8 | uint16(s[1]), G: uint16(s[2])<<8 | uint16(s[3]),
						B: uint16(s[4])<<8 | uint16(s[5]), A: uint16(s[6])<<8 | uint16(s[7])}).(color.NRGBA64)
					d[0], d[1], d[2] = byte(c.R>>8), byte(c.G>>8), byte(c.B>>8)
				}
			}
		}
	case *image.Paletted:
		lut := paletteRGB(m.Palette)
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x, i := range src {
				s := lut[int(i)*3 : int(i)*3+3 : int(i)*3+3]
				d := dst[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = s[0], s[1], s[2]
			}
		}
	case *image.CMYK:
		for y := 0; y < h; y++ {
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
			dst := out[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				s := src[x*4 : x*4+4 : x*4+4]
				d := dst[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = cmykToRGB(s[0], s[3]), cmykToRGB(s[1], s[3]), cmykToRGB(s[2], s[3])
			}
		}
	default:
		i := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				out[i], out[i+1], out[i+2] = c.R, c.G, c.B
				i += 3
			}
		}
	}
	return out, w, h
}

// fancyOrNearest converts with the decoder library's chroma upsampling
// where the layout allows it, else with replicated chroma.
func fancyOrNearest(out []byte, m *image.YCbCr, ycc yccRange) {
	switch {
	case ycc == yccJFIF && jpegToRGB(out, m):
	case ycc == yccBT601 && webpToRGB(out, m):
	default:
		yccToRGB(out, m, ycc)
	}
}

// unpremul undoes alpha premultiplication, rounding to nearest.
func unpremul(c, a byte) byte {
	if a == 0 {
		return 0
	}
	v := (uint32(c)*255 + uint32(a)/2) / uint32(a)
	return byte(min(v, 255))
}

// cmykToRGB is Pillow's cmyk2rgb for one channel:
// (255-k) - (c*(255-k))/255 with its rounding division by 255.
func cmykToRGB(c, k byte) byte {
	nk := 255 - int32(k)
	t := int32(c)*nk + 128
	return byte(nk - ((t>>8)+t)>>8)
}

// paletteRGB expands a palette to 256 packed RGB entries. Transparency is
// ignored, as Pillow's P-to-RGB conversion ignores it; indices beyond the
// palette are black.
func paletteRGB(p color.Palette) []byte {
	lut := make([]byte, 256*3)
	for i, c := range p {
		if i >= 256 {
			break
		}
		var r, g, b byte
		switch c := c.(type) {
		case color.NRGBA:
			r, g, b = c.R, c.G, c.B
		case color.RGBA:
			if c.A == 255 {
				r, g, b = c.R, c.G, c.B
			} else {
				r, g, b = unpremul(c.R, c.A), unpremul(c.G, c.A), unpremul(c.B, c.A)
			}
		default:
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			r, g, b = n.R, n.G, n.B
		}
		lut[i*3], lut[i*3+1], lut[i*3+2] = r, g, b
	}
	return lut
}

// yccToRGB converts a YCbCr image of any subsampling with nearest-neighbour
// (replicated) chroma, which is what libjpeg does where it does not
// fancy-upsample, then libjpeg's matrix (JPEG) or libwebp's BT.601
// limited-range one (WebP).
func yccToRGB(out []byte, m *image.YCbCr, ycc yccRange) {
	b := m.Rect
	w := b.Dx()
	hs := 0 // horizontal chroma subsampling shift; COffset handles rows
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420:
		hs = 1
	case image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410:
		hs = 2
	}
	cx0 := b.Min.X >> hs
	cn := ((b.Max.X - 1) >> hs) - cx0 + 1
	cbRow, crRow := make([]byte, w), make([]byte, w)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		co := m.COffset(b.Min.X, y)
		cb, cr := m.Cb[co:][:cn], m.Cr[co:][:cn]
		for x := range cbRow {
			ci := ((b.Min.X + x) >> hs) - cx0
			cbRow[x], crRow[x] = cb[ci], cr[ci]
		}
		yrow := m.Y[m.YOffset(b.Min.X, y):][:w]
		dst := out[(y-b.Min.Y)*w*3:][:w*3]
		if ycc == yccJFIF {
			jpegRow(dst, yrow, cbRow, crRow)
			continue
		}
		for x, yy := range yrow {
			d := dst[x*3 : x*3+3 : x*3+3]
			d[0], d[1], d[2] = webpYUVToRGB(yy, cbRow[x], crRow[x])
		}
	}
}

// webpYUVToRGB is libwebp's BT.601 limited-range conversion (yuv.h): 14-bit
// multipliers with 6 fractional bits left after the high multiply.
func webpYUVToRGB(y, u, v uint8) (uint8, uint8, uint8) {
	mulHi := func(a uint8, c int32) int32 { return (int32(a) * c) >> 8 }
	yy := mulHi(y, 19077)
	return clip6(yy + mulHi(v, 26149) - 14234),
		clip6(yy - mulHi(u, 6419) - mulHi(v, 13320) + 8708),
		clip6(yy + mulHi(u, 33050) - 17685)
}

func clip6(v int32) uint8 {
	if v&^((256<<6)-1) == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}
