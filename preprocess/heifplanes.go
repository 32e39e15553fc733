package preprocess

import (
	"encoding/binary"
	"fmt"
	"image"
)

// This file gets the coded Y, Cb, Cr planes of a HEIC out of the embedded
// libheif without any resampling. Asked for YCbCr, libheif 1.18 (as
// gen2brain builds it) upsamples 4:2:0 chroma bilinearly to 4:4:4 and
// averages it back for a coded (non-grid) image, and goes through RGB and
// back for a grid: tens of levels wrong at colour edges (measured: up to 68
// on a 640x480 photo). Declared as nclx matrix 0 (GBR) full range, every
// item is instead copied sample for sample into R=Cr, G=Y, B=Cb with
// nearest-neighbour chroma (libheif's Op_YCbCr_to_RGB), and 10- or 12-bit
// samples are shifted to 8 bits by libheif's own convert_hdr_to_8bit
// (Op_to_sdr_planes: v >> (bits-8), no rounding). heifToRGB then applies
// the file's real matrix and range once.
//
// Files without a colr box get one: the meta box is rebuilt with a colr
// nclx property associated with every item that has no nclx, appended at
// the end of the file; the old meta box becomes a free box of the same
// size, so no offset into the file moves.

// gbrColr is the body of a colr nclx property: primaries 1, transfer 13,
// matrix 0 (GBR), full range.
var gbrColr = []byte{'n', 'c', 'l', 'x', 0, 1, 0, 13, 0, 0, 0x80}

// heifPlanesFile returns a copy of a HEIC file in which libheif finds
// nothing to apply after decoding (irot and imir become irot 0, so they
// are applied once, by heifTransform) and every item is declared GBR, or
// ok false when the file's layout does not allow the rewrite.
func heifPlanesFile(data []byte, info *heifInfo) (out []byte, ok bool) {
	d := heifEdited(data, info, func(colr []byte) { copy(colr, gbrColr) })
	at, n, hdr, err := topBox(d, "meta")
	if err != nil {
		return nil, false
	}
	meta, err := gbrMeta(d[at+hdr : at+n])
	if err != nil {
		return nil, false
	}
	copy(d[at+4:], "free")
	return append(d, meta...), true
}

// topBox finds the first top-level box of type typ: its offset, size and
// header length. Boxes that run to the end of the file (size 0) are given
// their size, so that a box can be appended after them.
func topBox(d []byte, typ string) (at, n, hdr int, err error) {
	found := -1
	for p := 0; p < len(d); {
		if len(d)-p < 8 {
			return 0, 0, 0, fmt.Errorf("%w: trailing bytes", errBox)
		}
		size, h := int(binary.BigEndian.Uint32(d[p:])), 8
		switch size {
		case 0:
			size = len(d) - p
			if uint64(size) > 0xffffffff {
				return 0, 0, 0, fmt.Errorf("%w: box to end of file too large", errBox)
			}
			binary.BigEndian.PutUint32(d[p:], uint32(size))
		case 1:
			if len(d)-p < 16 {
				return 0, 0, 0, fmt.Errorf("%w: truncated box", errBox)
			}
			s := binary.BigEndian.Uint64(d[p+8:])
			if s > uint64(len(d)-p) {
				return 0, 0, 0, fmt.Errorf("%w: box past the end", errBox)
			}
			size, h = int(s), 16
		}
		if size < h || size > len(d)-p {
			return 0, 0, 0, fmt.Errorf("%w: box past the end", errBox)
		}
		if found < 0 && string(d[p+4:p+8]) == typ {
			found, n, hdr = p, size, h
		}
		p += size
	}
	if found < 0 {
		return 0, 0, 0, fmt.Errorf("%w: no %s box", errBox, typ)
	}
	return found, n, hdr, nil
}

// gbrMeta returns a new meta box from the body of meta: the same boxes,
// with a GBR colr property added to ipco and associated in ipma with every
// item that has no colr nclx.
func gbrMeta(meta []byte) ([]byte, error) {
	if len(meta) < 4 {
		return nil, fmt.Errorf("%w: short meta", errBox)
	}
	out := append([]byte(nil), meta[:4]...)
	done := false
	err := bmffBoxes(meta[4:], func(t string, body []byte) error {
		if t == "iprp" && !done {
			b, err := gbrIPRP(body)
			if err != nil {
				return err
			}
			out, done = append(out, bmffBoxBytes("iprp", b)...), true
			return nil
		}
		out = append(out, bmffBoxBytes(t, body)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("%w: no iprp", errBox)
	}
	return bmffBoxBytes("meta", out), nil
}

// gbrIPRP rewrites the body of iprp as gbrMeta describes.
func gbrIPRP(iprp []byte) ([]byte, error) {
	ipco, err := bmffFind(iprp, "ipco")
	if err != nil || ipco == nil {
		return nil, fmt.Errorf("%w: no ipco", errBox)
	}
	var isNCLX []bool // by property index - 1
	err = bmffBoxes(ipco, func(t string, body []byte) error {
		isNCLX = append(isNCLX, t == "colr" && len(body) >= 4 && string(body[:4]) == "nclx")
		return nil
	})
	if err != nil {
		return nil, err
	}
	idx := len(isNCLX) + 1
	var out []byte
	err = bmffBoxes(iprp, func(t string, body []byte) error {
		switch t {
		case "ipco":
			body = append(append([]byte(nil), body...), bmffBoxBytes("colr", gbrColr)...)
		case "ipma":
			b, err := gbrIPMA(body, isNCLX, idx)
			if err != nil {
				return err
			}
			body = b
		}
		out = append(out, bmffBoxBytes(t, body)...)
		return nil
	})
	return out, err
}

// gbrIPMA adds property idx to every ipma entry without an nclx property.
func gbrIPMA(b []byte, isNCLX []bool, idx int) ([]byte, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: short ipma", errBox)
	}
	wideID, wideIdx := b[0] >= 1, b[3]&1 != 0
	if (!wideIdx && idx > 0x7f) || idx > 0x7fff {
		return nil, fmt.Errorf("%w: no room for another property", errBox)
	}
	out := append([]byte(nil), b[:8]...)
	p := 8
	for n := binary.BigEndian.Uint32(b[4:]); n > 0; n-- {
		idLen, aLen := 2, 1
		if wideID {
			idLen = 4
		}
		if wideIdx {
			aLen = 2
		}
		if len(b)-p < idLen+1 {
			return nil, fmt.Errorf("%w: short ipma", errBox)
		}
		count := int(b[p+idLen])
		end := p + idLen + 1 + count*aLen
		if end > len(b) {
			return nil, fmt.Errorf("%w: short ipma", errBox)
		}
		has := false
		for a := p + idLen + 1; a < end; a += aLen {
			i := int(b[a] & 0x7f)
			if wideIdx {
				i = int(binary.BigEndian.Uint16(b[a:]) & 0x7fff)
			}
			has = has || (i >= 1 && i <= len(isNCLX) && isNCLX[i-1])
		}
		out = append(out, b[p:end]...)
		if !has {
			if count == 0xff {
				return nil, fmt.Errorf("%w: no room for another association", errBox)
			}
			out[len(out)-(end-p)+idLen]++
			if wideIdx {
				out = binary.BigEndian.AppendUint16(out, uint16(idx))
			} else {
				out = append(out, byte(idx))
			}
		}
		p = end
	}
	return append(out, b[p:]...), nil
}

// bmffBoxBytes is a box of type typ around body.
func bmffBoxBytes(typ string, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 8+len(body)), uint32(8+len(body)))
	return append(append(out, typ...), body...)
}

// heifToRGBDeep is heifToRGB for planes of depth bits (10 or 12) that
// libheif has shifted to 8 (m): each sample is taken back to depth bits
// at the middle of the values it may have been, converted at depth bits
// as libheif converts HDR planes (Op_YCbCr_to_RGB<uint16_t>), and the RGB
// shifted to 8 bits as libheif's convert_hdr_to_8bit does. At 8 bits or
// less it is heifToRGB.
func heifToRGBDeep(m *image.YCbCr, c nclx, depth int) *packedRGB {
	b := m.Rect
	w, h := b.Dx(), b.Dy()
	out := &packedRGB{Pix: rgbOutput(w * h * 3), W: w, H: h}
	v := newHeifConv(c, depth)
	for y := 0; y < h; y++ {
		row := out.Pix[y*w*3 : (y+1)*w*3]
		yrow := m.Y[m.YOffset(b.Min.X, b.Min.Y+y):][:w]
		for x := 0; x < w; x++ {
			ci := m.COffset(b.Min.X+x, b.Min.Y+y)
			p := row[x*3 : x*3+3 : x*3+3]
			p[0], p[1], p[2] = v.rgb(yrow[x], m.Cb[ci], m.Cr[ci])
		}
	}
	return out
}

// gbrToRGB converts libheif's RGBA output of a file made by heifPlanesFile
// (R=Cr, G=Y, B=Cb, chroma at full resolution) to opaque packed RGB; it
// returns nil for other images (grey).
func gbrToRGB(img image.Image, c nclx, depth int) *packedRGB {
	var pix []byte
	var stride int
	var r image.Rectangle
	switch m := img.(type) {
	case *image.NRGBA:
		pix, stride, r = m.Pix, m.Stride, m.Rect
	case *image.RGBA: // alpha, premultiplied or not, is dropped
		pix, stride, r = m.Pix, m.Stride, m.Rect
	default:
		return nil
	}
	return gbrRows(newHeifConv(c, depth), r.Dx(), r.Dy(), func(y int) []byte { return pix[y*stride:] })
}

// gbrRows converts w x h GBR pixels (4 bytes each: R=Cr, G=Y, B=Cb, then
// one ignored), which row(y) returns a row at a time, to packed RGB.
func gbrRows(v *heifConv, w, h int, row func(y int) []byte) *packedRGB {
	out := &packedRGB{Pix: rgbOutput(w * h * 3), W: w, H: h}
	for y := 0; y < h; y++ {
		src := row(y)[:4*w]
		dst := out.Pix[y*w*3 : (y+1)*w*3]
		if v.matrixRow(dst, src) {
			continue
		}
		for x := 0; x < w; x++ {
			p, d := src[x*4:x*4+4:x*4+4], dst[x*3:x*3+3:x*3+3]
			d[0], d[1], d[2] = v.rgb(p[1], p[2], p[0])
		}
	}
	return out
}

// matrixRow is v.rgb over a row of GBR pixels (4 bytes each, R=Cr, G=Y,
// B=Cb) into packed RGB, for the common case of 8-bit samples and a
// matrix of coefficients (not GBR, not YCgCo), through v.tables: the same
// float32 arithmetic, term by term, without rgb's dispatch and float work
// at every pixel (TestHEIFMatrixRowExact compares them on every sample
// triple). It reports false, doing nothing, in the other cases.
func (v *heifConv) matrixRow(dst, src []byte) bool {
	if v.shift > 0 || v.c.matrix == 0 || v.c.matrix == 8 {
		return false
	}
	t := v.tables()
	n := min(len(dst)/3, len(src)/4)
	for x := 0; x < n; x++ {
		p, d := src[x*4:x*4+4:x*4+4], dst[x*3:x*3+3:x*3+3]
		yc, yb := int(p[1])<<8|int(p[0]), int(p[1])<<8|int(p[2])
		d[0] = t.r[yc]
		d[1] = heifClipF(t.g[yb] + t.gCr[p[0]])
		d[2] = t.b[yb]
	}
	return true
}

// heifTables hold v.rgb's terms for 8-bit samples: R of (Y, Cr), B of
// (Y, Cb), G's sum of the Y and Cb terms, and its Cr term.
type heifTables struct {
	r, b [256 * 256]uint8
	g    [256 * 256]float32
	gCr  [256]float32
}

// tables computes v's tables once (about 0.3 ms).
func (v *heifConv) tables() *heifTables {
	if v.tab != nil {
		return v.tab
	}
	t, k := new(heifTables), v.k
	term := func(s uint8, luma bool) float32 { // a sample as rgb scales it
		if luma {
			f := float32(int32(s))
			if !v.c.fullRange {
				f = float32(f-16) * 1.1689
			}
			return f
		}
		f := float32(int32(s) - 128)
		if !v.c.fullRange {
			f = f * 1.1429
		}
		return f
	}
	for c := range 256 {
		t.gCr[c] = float32(k.gCr * term(uint8(c), false))
	}
	for y := range 256 {
		fy := term(uint8(y), true)
		for c := range 256 {
			fc := term(uint8(c), false)
			i := y<<8 | c
			t.r[i] = heifClipF(fy + float32(k.rCr*fc))
			t.b[i] = heifClipF(fy + float32(k.bCb*fc))
			t.g[i] = float32(fy + float32(k.gCb*fc))
		}
	}
	v.tab = t
	return t
}
