package preprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"io"
	"math/bits"
)

// This file decodes HEIC/HEIF and AVIF with the WebAssembly builds of
// libheif + libde265 and libavif that github.com/gen2brain/heic and
// github.com/gen2brain/avif embed, run by wazero (heifwasm.go): pure Go, no
// network, no cgo, and never a system library. When the program names an
// ffmpeg (UseFFmpeg), a HEIC's HEVC pictures are decoded by it instead,
// to the same pixels (heifffmpeg.go).
//
// What each library does and what is done here:
//   - The header is read here first (heifbox.go): the pixel limit is
//     checked from ispe before any decoder runs, grids whose tiles
//     cover far more than the image are refused, and so are files cut
//     short inside the data of the primary image or of its tiles
//     (heifCheckExtents: libavif would decode them as if whole).
//   - HEIC: libheif assembles grids and applies clap, and hands back the Y,
//     Cb, Cr planes as coded, through a copy of the file that declares them
//     GBR (heifplanes.go); 10-bit samples come shifted to 8 bits by its
//     convert_hdr_to_8bit. They are converted to RGB here with the matrix
//     and range of the file's nclx colr box (BT.601 full range without one,
//     as libheif), with libheif's own arithmetic (nearest-neighbour chroma,
//     its float path; 10-bit at 10 bits, heifToRGBDeep). irot/imir are
//     applied to the RGB image, once (heifTransform), even with
//     Options.IgnoreEXIF; EXIF orientation inside a HEIC never is (HEIF
//     says irot/imir rule: libheif ignores EXIF, and pillow-heif, through
//     which Hugging Face's pipeline opens a HEIC, resets it to 1).
//   - AVIF: libavif converts to RGB itself from the nclx the file declares
//     (its own chroma upsampling), 10/12-bit to 16-bit samples whose
//     high byte is kept, as for 16-bit PNG. libavif does not apply irot and
//     imir; heifTransform does, as for HEIC. clap is not applied to AVIF.
//   - gen2brain's Go wrappers would first look for a system libheif.so /
//     libavif.so; they are bypassed (heifwasm.go), so the pixels never
//     depend on what the machine has installed.

// heifDecoder is the library that decodes a given primary item.
type heifDecoder uint8

const (
	heifNone heifDecoder = iota
	heifLibheif
	heifLibavif
)

// decoderFor chooses the library from the coded item type (a grid by its
// first tile).
func (in *heifInfo) decoderFor() heifDecoder {
	t := in.itemType
	if t == "grid" {
		t = in.tileType
	}
	switch t {
	case "hvc1":
		return heifLibheif
	case "av01":
		return heifLibavif
	}
	return heifNone
}

// heifHeader parses and sanity-checks the header of a HEIF/AVIF file.
func heifHeader(data []byte) (*heifInfo, error) {
	info, err := parseHEIF(data)
	if err != nil {
		return nil, err
	}
	if info.decoderFor() == heifNone {
		t := info.itemType
		if t == "grid" {
			t = "grid of " + info.tileType
		}
		return nil, fmt.Errorf("%w: primary image coded as %q (HEVC and AV1 are decoded)", ErrUnsupported, t)
	}
	if info.w <= 0 || info.h <= 0 {
		return nil, fmt.Errorf("%w: primary image has no size (ispe)", errBox)
	}
	if info.itemType == "grid" {
		if info.tileW <= 0 || info.tileH <= 0 {
			return nil, fmt.Errorf("%w: grid tile has no size (ispe)", errBox)
		}
		// Tiles overhang the image by less than one tile per row and column.
		if gridOvercovers(info) {
			return nil, fmt.Errorf("%w: %d grid tiles of %dx%d for a %dx%d image", errBox, info.tiles, info.tileW, info.tileH, info.w, info.h)
		}
	}
	if err := heifCheckExtents(data); err != nil {
		return nil, err
	}
	return info, nil
}

// gridOvercovers reports whether a grid's tiles cover more than (w + tileW)
// x (h + tileH), the most tiles that overhang the image by less than one
// tile per row and column can cover. The products are taken in 128 bits:
// ispe sizes are 32-bit numbers, and tiles x tileW x tileH can overflow an
// int64 (four tiles of 0x7fffffff squared wrap to a negative number).
func gridOvercovers(info *heifInfo) bool {
	tileHi, tile := bits.Mul64(uint64(info.tileW), uint64(info.tileH))
	if tileHi != 0 { // not from 32-bit sizes: too large to be a tile anyway
		return true
	}
	coveredHi, covered := bits.Mul64(uint64(info.tiles), tile)
	limitHi, limit := bits.Mul64(uint64(info.w)+uint64(info.tileW), uint64(info.h)+uint64(info.tileH))
	return coveredHi > limitHi || coveredHi == limitHi && covered > limit
}

// errHEIFTruncated is returned when a data extent of the primary image (or
// of one of its grid tiles) lies past the end of the file: the file was cut
// short. libheif refuses such a file, but libavif decodes what is there.
var errHEIFTruncated = errors.New("file is truncated")

// heifCheckExtents checks that every extent the decoders will read for the
// primary item of data, and for its tiles when it is a grid, lies inside
// the file, or inside the idat box for an item stored there (construction
// method 1). A meta box this cannot read is left to the decoders.
func heifCheckExtents(data []byte) error {
	it, ok := readHEIFItems(data)
	if !ok {
		return nil
	}
	locs, ok := ilocItems(it.iloc)
	if !ok {
		return nil
	}
	dimg := map[uint32][]uint32{}
	if it.iref != nil {
		var thmbs []heifThmb
		if err := parseIREF(it.iref, dimg, &thmbs); err != nil {
			return err
		}
	}
	for _, id := range append([]uint32{it.primary}, dimg[it.primary]...) {
		l, found := locs[id]
		if !found {
			continue
		}
		for _, e := range l.extents {
			off, n := e[0], e[1] // n == 0: to the end of the file or idat
			switch {
			case l.method == 1 && (off > uint64(len(it.idat)) || n > uint64(len(it.idat))-off):
				return fmt.Errorf("%w: item %d's data needs %d bytes from offset %d of an idat box of %d bytes", errBox, id, n, off, len(it.idat))
			case l.method == 0 && (off > uint64(len(data)) || n > uint64(len(data))-off):
				return fmt.Errorf("%w: item %d's data needs %d bytes from offset %d, the file has %d bytes", errHEIFTruncated, id, n, off, len(data))
			}
		}
	}
	return nil
}

// heifConfig is the header check of decode.go for HEIC and AVIF: the size
// comes from ispe, turned by irot.
func heifConfig(r io.Reader) (image.Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return image.Config{}, err
	}
	info, err := heifHeader(data)
	if err != nil {
		return image.Config{}, err
	}
	w, h := orientDims(info.w, info.h, info.orient)
	return image.Config{Width: w, Height: h}, nil
}

// heifDecode decodes the primary image of a HEIC or AVIF file, with its
// irot/imir applied (once: see heifNeutralise).
func heifDecode(r io.Reader) (image.Image, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	info, err := heifHeader(data)
	if err != nil {
		return nil, err
	}
	return heifDecodeItem(context.Background(), data, info)
}

// heifDecodeItem decodes the primary image of data, described by info,
// with its irot/imir applied; cancelling ctx stops the decoder. A HEIC's
// planes are taken as coded (heifPlanesFile) and converted here, by ffmpeg
// when UseFFmpeg named one and the file allows it (heifffmpeg.go).
func heifDecodeItem(ctx context.Context, data []byte, info *heifInfo) (image.Image, error) {
	return heifDecodeWindow(ctx, data, info, image.Rectangle{})
}

// heifDecodeWindow is heifDecodeItem for a reader that reads only the
// pixels in win (coordinates of the image as shown, after irot/imir; empty
// for all): where ffmpeg decodes a grid, the tiles outside win are not
// decoded and their pixels are left undefined.
func heifDecodeWindow(ctx context.Context, data []byte, info *heifInfo, win image.Rectangle) (image.Image, error) {
	coded := unorientRect(win, info.w, info.h, info.orient)
	if info.decoderFor() != heifLibavif && HEVCDecoder() != "" {
		if _, gbr := heifPlanesFile(data, info); gbr {
			if m, ok := heifFFmpeg(ctx, data, heifNCLX(info), info.depth, coded); ok {
				return heifTransform(m, info.orient), nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	if !coded.Empty() && info.decoderFor() != heifLibavif {
		if m, ok := heifDecodeSubGrid(ctx, data, info, coded); ok {
			return heifTransform(m, info.orient), nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return heifDecodeBuiltin(ctx, data, info)
}

// heifNCLX is the colour description a HEIC's planes are converted with.
func heifNCLX(info *heifInfo) nclx {
	switch {
	case info.colour != nil:
		return *info.colour
	case info.tileColour != nil:
		return *info.tileColour
	}
	return nclx{matrix: 2, fullRange: true} // libheif's default without a colr box
}

// heifDecodeBuiltin is heifDecodeItem with the embedded decoders alone.
func heifDecodeBuiltin(ctx context.Context, data []byte, info *heifInfo) (image.Image, error) {
	img, _, err := heifDecodeCoded(ctx, data, info)
	if err != nil {
		return nil, err
	}
	return heifTransform(img, info.orient), nil
}

// heifDecodeCoded is heifDecodeBuiltin before irot/imir; gbr reports
// whether libheif's planes came through heifPlanesFile's GBR copy.
func heifDecodeCoded(ctx context.Context, data []byte, info *heifInfo) (img image.Image, gbr bool, err error) {
	// heifHeader checked the file's primary item, but data may make another
	// one primary (a thumbnail, heifDecodeThumb): libavif would decode its
	// data cut short as if it were whole.
	if err := heifCheckExtents(data); err != nil {
		return nil, false, err
	}
	if info.decoderFor() == heifLibavif {
		img, err = libavifDecode(ctx, data)
	} else {
		var file []byte
		file, gbr = heifPlanesFile(data, info)
		if !gbr {
			file = heifNeutralise(data, info)
		}
		c := heifNCLX(info)
		// Converted to packed RGB straight from the decoder's memory.
		img, err = libheifDecode(ctx, file, func(img image.Image) image.Image {
			if m, ok := img.(*image.YCbCr); ok {
				return heifToRGBDeep(m, c, info.depth)
			}
			if gbr {
				if out := gbrToRGB(img, c, info.depth); out != nil {
					return out
				}
			}
			return nil
		})
	}
	return img, gbr, err
}

// unorientRect maps r, a rectangle of a w x h image shown as orientation
// o asks, back to the image as stored: the bounding box of its corners.
func unorientRect(r image.Rectangle, w, h, o int) image.Rectangle {
	base, dx, dy, moved := orientWalk(w, h, o)
	if r.Empty() || !moved {
		return r
	}
	out := image.Rectangle{}
	for i, c := range []image.Point{r.Min, {r.Max.X - 1, r.Min.Y}, {r.Min.X, r.Max.Y - 1}, r.Max.Sub(image.Pt(1, 1))} {
		p := base + c.Y*dy + c.X*dx
		q := image.Rect(p%w, p/w, p%w+1, p/w+1)
		if i == 0 {
			out = q
		} else {
			out = out.Union(q)
		}
	}
	return out
}

// heifTransform applies an orientation code (irot/imir composed) to a
// decoded image, whatever Options.IgnoreEXIF says: unlike EXIF, these
// properties are part of the image's geometry.
func heifTransform(img image.Image, o int) image.Image {
	if o == 1 {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	ow, oh := orientDims(w, h, o)
	r := image.Rect(0, 0, ow, oh)
	switch m := img.(type) {
	case *packedRGB:
		out := &packedRGB{Pix: rgbOutput(ow * oh * 3), W: ow, H: oh}
		orient(out.Pix, m.Pix, w, h, o)
		releaseDecoded(m)
		return out
	case *image.NRGBA:
		out := image.NewNRGBA(r)
		orientPix(out.Pix, packRows(m.Pix, m.Stride, 4*w, h), w, h, o, 4)
		return out
	case *image.RGBA:
		out := image.NewRGBA(r)
		orientPix(out.Pix, packRows(m.Pix, m.Stride, 4*w, h), w, h, o, 4)
		return out
	case *image.RGBA64:
		out := image.NewRGBA64(r)
		orientPix(out.Pix, packRows(m.Pix, m.Stride, 8*w, h), w, h, o, 8)
		return out
	case *image.Gray:
		out := image.NewGray(r)
		orientPix(out.Pix, packRows(m.Pix, m.Stride, w, h), w, h, o, 1)
		return out
	}
	out := image.NewNRGBA(r)
	src := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(src, src.Rect, img, b.Min, draw.Src)
	orientPix(out.Pix, src.Pix, w, h, o, 4)
	return out
}

// packRows returns the h rows of n bytes of pix (stride apart) contiguous.
func packRows(pix []byte, stride, n, h int) []byte {
	if stride == n {
		return pix[:n*h]
	}
	out := make([]byte, 0, n*h)
	for y := 0; y < h; y++ {
		out = append(out, pix[y*stride:y*stride+n]...)
	}
	return out
}

// orientPix is orient (orient.go) for pixels of bpp bytes: src is w x h,
// dst receives it displayed as orientation o asks.
func orientPix(dst, src []byte, w, h, o, bpp int) {
	ow, oh := orientDims(w, h, o)
	base, dx, dy, moved := orientWalk(w, h, o)
	if !moved {
		copy(dst, src)
		return
	}
	for y := 0; y < oh; y++ {
		p := base + y*dy
		d := dst[y*ow*bpp : (y+1)*ow*bpp]
		for x := 0; x < ow; x++ {
			copy(d[x*bpp:x*bpp+bpp], src[p*bpp:p*bpp+bpp])
			p += dx
		}
	}
}

// heifNeutralise is the fallback of heifPlanesFile for a file whose meta
// box cannot be rebuilt: a copy in which libheif finds nothing to apply
// after decoding (its planes are then resampled, see heifplanes.go): every irot and imir box becomes irot 0,
// every nclx colr box says BT.601 full range (sRGB primaries and transfer).
// Measured with libheif 1.18 (the WASM build): it rotates the subsampled
// planes of odd-sized images with the chroma shifted by a pixel, and it
// converts grid tiles that carry an nclx to BT.601 full range before
// handing them over, rounding twice. So the file's nclx is applied once
// (heifToRGB), and irot/imir are applied to the RGB image (heifTransform),
// which is what heif-convert (libheif 1.15) gives. Box sizes do not change.
func heifNeutralise(data []byte, info *heifInfo) []byte {
	if len(info.edits) == 0 {
		return data
	}
	return heifEdited(data, info, func(colr []byte) { copy(colr[4:], []byte{0, 1, 0, 13, 0, 6, 0x80}) })
}

// heifEdited returns a copy of data in which every irot and imir box of
// info.edits becomes irot 0 (applied once, later, by heifTransform) and
// every colr box is rewritten in place by colr (box sizes never change).
func heifEdited(data []byte, info *heifInfo, colr func(b []byte)) []byte {
	d := bytes.Clone(data)
	for _, e := range info.edits {
		b := d[e.at:]
		switch e.typ {
		case "irot", "imir":
			copy(d[e.at-4:], "irot")
			b[0] = 0
		case "colr":
			colr(b)
		}
	}
	return d
}

// ycbcrCoeffs are libheif's YCbCr-to-RGB multipliers (nclx.cc) in float32:
// Kr and Kb from the matrix code, or derived from the primaries for codes
// 12 and 13; BT.601 when unknown.
type ycbcrCoeffs struct{ rCr, gCb, gCr, bCb float32 }

func heifCoeffs(c nclx) ycbcrCoeffs {
	var kr, kb float32
	switch c.matrix {
	case 1:
		kr, kb = 0.2126, 0.0722
	case 4:
		kr, kb = 0.30, 0.11
	case 5, 6:
		kr, kb = 0.299, 0.114
	case 7:
		kr, kb = 0.212, 0.087
	case 9, 10:
		kr, kb = 0.2627, 0.0593
	case 12, 13:
		kr, kb = krkbFromPrimaries(c.primaries)
	}
	if kr == 0 && kb == 0 {
		return ycbcrCoeffs{1.402, -0.344136, -0.714136, 1.772}
	}
	return ycbcrCoeffs{
		rCr: 2 * (-kr + 1),
		gCb: 2 * kb * (-kb + 1) / (kb + kr - 1),
		gCr: 2 * kr * (-kr + 1) / (kb + kr - 1),
		bCb: 2 * (-kb + 1),
	}
}

// krkbFromPrimaries derives Kr and Kb from chromaticities (H.273, matrix
// coefficients 12/13), with libheif's float32 formula; 0, 0 when unknown.
func krkbFromPrimaries(idx uint16) (kr, kb float32) {
	// gx, gy, bx, by, rx, ry, wx, wy
	table := map[uint16][8]float32{
		1:  {0.300, 0.600, 0.150, 0.060, 0.640, 0.330, 0.3127, 0.3290},
		4:  {0.21, 0.71, 0.14, 0.08, 0.67, 0.33, 0.310, 0.316},
		5:  {0.29, 0.60, 0.15, 0.06, 0.64, 0.33, 0.3127, 0.3290},
		6:  {0.310, 0.595, 0.155, 0.070, 0.630, 0.340, 0.3127, 0.3290},
		7:  {0.310, 0.595, 0.155, 0.070, 0.630, 0.340, 0.3127, 0.3290},
		9:  {0.170, 0.797, 0.131, 0.046, 0.708, 0.292, 0.3127, 0.3290},
		11: {0.265, 0.690, 0.150, 0.060, 0.680, 0.320, 0.314, 0.351},
		12: {0.265, 0.690, 0.150, 0.060, 0.680, 0.320, 0.3127, 0.3290},
		22: {0.295, 0.605, 0.155, 0.077, 0.630, 0.340, 0.3127, 0.3290},
	}
	p, ok := table[idx]
	if !ok {
		return 0, 0
	}
	gx, gy, bx, by, rx, ry, wx, wy := p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
	zr, zg, zb, zw := 1-(rx+ry), 1-(gx+gy), 1-(bx+by), 1-(wx+wy)
	denom := wy * (rx*(gy*zb-by*zg) + gx*(by*zr-ry*zb) + bx*(ry*zg-gy*zr))
	if denom == 0 {
		return 0, 0
	}
	kr = (ry * (wx*(gy*zb-by*zg) + wy*(bx*zg-gx*zb) + zw*(gx*by-bx*gy))) / denom
	kb = (by * (wx*(ry*zg-gy*zr) + wy*(gx*zr-rx*zg) + zw*(rx*gy-gx*ry))) / denom
	return kr, kb
}

// heifToRGB converts 8-bit Y, Cb, Cr planes to opaque RGB as libheif's
// Op_YCbCr_to_RGB (yuv2rgb.cc) does: nearest-neighbour chroma, float32
// arithmetic, add one half and truncate. libheif also has an integer fast
// path for full-range 4:2:0 (multipliers rounded to 1/256); Debian's
// heif-convert (libheif 1.15) does not take it for these files, and the
// float path matches it exactly (see TestHEIFMatchesHeifConvert).
func heifToRGB(m *image.YCbCr, c nclx) *packedRGB { return heifToRGBDeep(m, c, 8) }

// heifConv converts one pixel as heifToRGB describes or, for planes of
// more than 8 bits that libheif has shifted to 8, as heifToRGBDeep does.
type heifConv struct {
	c     nclx
	k     ycbcrCoeffs
	shift uint // bits dropped by libheif; 0 converts at 8 bits
	// For shift > 0: the scale back to depth bits, the middle of the
	// dropped values, the chroma offset, the limited-range black level and
	// the largest sample, all at depth bits.
	scale, mid, half, off float32
	top                   int64
	tab                   *heifTables // matrixRow's, made at its first use
}

func newHeifConv(c nclx, depth int) *heifConv {
	v := &heifConv{c: c, k: heifCoeffs(c)}
	// Matrices 0 and 8 have no arithmetic that depth changes.
	if depth > 8 && depth <= 16 && c.matrix != 0 && c.matrix != 8 {
		v.shift = uint(depth - 8)
		v.scale, v.mid = float32(int(1)<<v.shift), float32(int(1)<<v.shift-1)/2
		v.half, v.top, v.off = float32(int(1)<<(depth-1)), int64(1)<<depth-1, 16*v.scale
	}
	return v
}

// rgb converts one pixel.
func (v *heifConv) rgb(y8, cb8, cr8 uint8) (r, g, bl uint8) {
	if v.shift > 0 {
		return v.rgbDeep(y8, cb8, cr8)
	}
	c, k := v.c, v.k
	yy, cb, cr := int32(y8), int32(cb8)-128, int32(cr8)-128
	switch {
	case c.matrix == 0 && c.fullRange: // GBR stored as Y=G, Cb=B, Cr=R
		return cr8, y8, cb8
	case c.matrix == 0:
		r = heifClipF(float32(float32(cr+128)-16) * 1.1429)
		g = heifClipF(float32(float32(yy)-16) * 1.1689)
		bl = heifClipF(float32(float32(cb+128)-16) * 1.1429)
		return r, g, bl
	case c.matrix == 8: // YCgCo
		return clampByte(yy - cb + cr), clampByte(yy + cb), clampByte(yy - cb - cr)
	}
	fy, fcb, fcr := float32(yy), float32(cb), float32(cr)
	if !c.fullRange {
		fy = float32(fy-16) * 1.1689
		fcb = fcb * 1.1429
		fcr = fcr * 1.1429
	}
	r = heifClipF(fy + float32(k.rCr*fcr))
	g = heifClipF(float32(fy+float32(k.gCb*fcb)) + float32(k.gCr*fcr))
	bl = heifClipF(fy + float32(k.bCb*fcb))
	return r, g, bl
}

// rgbDeep converts one pixel at depth bits, each sample taken back from 8
// bits at the middle of the values it may have been.
func (v *heifConv) rgbDeep(y8, cb8, cr8 uint8) (r, g, bl uint8) {
	k := v.k
	fy := float32(y8)*v.scale + v.mid
	fcb := float32(cb8)*v.scale + v.mid - v.half
	fcr := float32(cr8)*v.scale + v.mid - v.half
	if !v.c.fullRange {
		fy = float32(fy-v.off) * 1.1689
		fcb = fcb * 1.1429
		fcr = fcr * 1.1429
	}
	return v.clip(fy + float32(k.rCr*fcr)), v.clip(float32(fy+float32(k.gCb*fcb)) + float32(k.gCr*fcr)),
		v.clip(fy + float32(k.bCb*fcb))
}

// clip is libheif's clip_f_u16 at depth bits, then its shift to 8 bits.
func (v *heifConv) clip(f float32) uint8 {
	return uint8(min(max(int64(f+0.5), 0), v.top) >> v.shift)
}

// heifClipF is libheif's clip_f_u16 for 8-bit output: add one half,
// truncate, clamp to 0..255.
func heifClipF(f float32) uint8 {
	x := int64(f + 0.5)
	return uint8(min(max(x, 0), 255))
}

// orientTable[a][b] is the EXIF orientation equal to showing an image as
// orientation a asks and then transforming the result as b asks.
var orientTable = func() (t [9][9]int) {
	const w, h = 3, 2
	src := make([]byte, w*h*3)
	for i := range w * h {
		src[i*3] = byte(i)
	}
	shown := func(s []byte, sw, sh, o int) ([]byte, int, int) {
		d := make([]byte, len(s))
		dw, dh := orient(d, s, sw, sh, o)
		return d, dw, dh
	}
	for a := 1; a <= 8; a++ {
		da, aw, ah := shown(src, w, h, a)
		for b := 1; b <= 8; b++ {
			db, _, _ := shown(da, aw, ah, b)
			for o := 1; o <= 8; o++ {
				if do, _, _ := shown(src, w, h, o); bytes.Equal(do, db) {
					t[a][b] = o
				}
			}
		}
	}
	return t
}()

// composeOrient returns the single orientation for a then b (both 1..8).
func composeOrient(a, b int) int { return orientTable[a][b] }
