package preprocess

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
)

// DecodeReduced decodes an encoded image held in memory for display at
// about the size it will be shown, cheaply: the result's longer side is at
// least minSide pixels whenever the image's longer side is (minSide < 1
// counts as 1), and otherwise the image is decoded at full size. name is
// used in error messages only (and to tell camera RAW files apart by
// extension). The EXIF orientation is applied as Decode applies it, and
// the pixels are Decode's packed RGB as an opaque *image.RGBA.
//
// What each format does:
//   - JPEG: libjpeg-turbo's DCT scaling (jpegscale.go), at the largest of
//     1/8, 1/4 and 1/2 that keeps minSide, bit for bit as djpeg -scale 1/N
//     gives it; full size when even 1/2 would not.
//   - HEIC and AVIF: the smallest thumbnail item of the primary image
//     (a thmb reference, as cameras and heif-enc -t write them) whose
//     longer side is at least minSide, after its irot/imir; else, or when
//     that thumbnail fails to decode, the primary image.
//   - Camera RAW: the smallest embedded JPEG preview whose longer side is
//     at least minSide (else the largest, which Decode uses), itself DCT
//     scaled as a JPEG.
//   - Other formats: full size, as Decode.
//
// The pixel limit is DefaultMaxPixels, checked before pixel memory is
// allocated, against what is allocated: for a sequential JPEG the reduced
// size (its planes and RGB exist only at that size); for a progressive
// JPEG the full frame (libjpeg's progressive mode keeps every coefficient
// of the frame); for HEIC/AVIF the item decoded; for RAW the preview.
//
// Cancelling ctx stops a HEIC/AVIF decode inside the WebAssembly decoder
// and a JPEG decode at the next row of MCUs of its current scan (and, for
// a reduced progressive JPEG, at the next block row of its final IDCT);
// the error then wraps ctx.Err() and none of ErrCorrupt, ErrUnsupported,
// ErrUnknownFormat and ErrTooLarge, which the other errors wrap as
// Decode's do. PNG, GIF, WebP, BMP and TIFF decodes do not stop early. A
// context that can be cancelled runs HEIC/AVIF through the stoppable
// build of the decoders, several times slower than the one
// context.Background gets (see moduleFor).
func DecodeReduced(ctx context.Context, data []byte, name string, minSide int) (*image.RGBA, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("decode %s: %w", name, err)
	}
	minSide = max(minSide, 1)
	img, f, err := decodeReduced(ctx, data, name, minSide)
	if err != nil {
		return nil, err
	}
	return displayRGBA(img, f, data, false), nil
}

// decodeReduced is decodeImage at reduced size where the format allows it.
func decodeReduced(ctx context.Context, data []byte, name string, minSide int) (image.Image, format, error) {
	f, detail := sniff(data, name)
	var img image.Image
	var err error
	switch f {
	case fmtJPEG:
		img, err = decodeJPEGReduced(ctx, data, name, DefaultMaxPixels, minSide)
	case fmtRAW:
		img, err = decodeRAWReduced(ctx, data, name, detail, minSide)
	case fmtHEIC, fmtAVIF:
		img, err = decodeHEIFReduced(ctx, data, name, f, minSide)
	default:
		return decodeImage(data, name, DefaultMaxPixels)
	}
	return img, f, err
}

// decodeRAWReduced decodes the smallest preview of a RAW file that keeps
// minSide, DCT-scaled.
func decodeRAWReduced(ctx context.Context, data []byte, name, kind string, minSide int) (image.Image, error) {
	cands, err := rawPreviews(data)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w: %s: %w", name, ErrUnsupported, kind, err)
	}
	p := largestPreview(cands)
	for _, c := range cands {
		if max(c.w, c.h) >= minSide && int64(c.w)*int64(c.h) < int64(p.w)*int64(p.h) {
			p = c
		}
	}
	return decodeJPEGReduced(ctx, p.jpeg, fmt.Sprintf("%s (%s embedded preview)", name, kind), DefaultMaxPixels, minSide)
}

// decodeHEIFReduced decodes a HEIC or AVIF file through the thumbnail
// thumbFor picks, or its primary image, with the checks decodeImage makes.
func decodeHEIFReduced(ctx context.Context, data []byte, name string, f format, minSide int) (image.Image, error) {
	const maxPixels = DefaultMaxPixels
	info, err := heifHeader(data)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w: %s header: %w", name, ErrCorrupt, f, err)
	}
	if t := info.thumbFor(data, minSide, maxPixels); t != nil {
		img, err := heifDecodeThumb(ctx, data, info, t)
		if err == nil {
			return img, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("decode %s: %w", name, ctx.Err())
		}
		// A thumbnail that does not decode as described: the primary image.
	}
	w, h := orientDims(info.w, info.h, info.orient)
	if pixelsOver(w, h, maxPixels) {
		return nil, tooLarge(name, w, h, maxPixels)
	}
	img, err := safely(func() (image.Image, error) { return heifDecodeItem(ctx, data, info) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("decode %s: %w", name, ctx.Err())
		}
		return nil, fmt.Errorf("decode %s: %w: %s: %w", name, ErrCorrupt, f, err)
	}
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 || pixelsOver(b.Dx(), b.Dy(), maxPixels) {
		return nil, fmt.Errorf("decode %s: %w: decoded %s image is %dx%d", name, ErrCorrupt, f, b.Dx(), b.Dy())
	}
	return img, nil
}

// thumbFor returns the smallest thumbnail of the primary image whose
// longer side (ispe) is at least minSide, smaller than the primary image,
// within maxPixels, coded as one HEVC or AV1 image, and that
// heifDecodeThumb can make primary; nil if there is none.
func (in *heifInfo) thumbFor(data []byte, minSide int, maxPixels int64) *heifThumb {
	var best *heifThumb
	for i := range in.thumbs {
		t := &in.thumbs[i]
		// Sizes from the file's boxes: compared without products that
		// could overflow (pixelsOver) before px is computed.
		if t.w <= 0 || t.h <= 0 || pixelsOver(t.w, t.h, maxPixels) {
			continue
		}
		px := int64(t.w) * int64(t.h)
		ok := max(t.w, t.h) >= minSide && pixelsOver(in.w, in.h, px) &&
			(t.itemType == "hvc1" || t.itemType == "av01") && (in.pitmWide || t.id <= 0xffff) &&
			t.refAt >= 0 && t.refAt+4 <= len(data) && string(data[t.refAt:t.refAt+4]) == "thmb"
		if ok && (best == nil || px < int64(best.w)*int64(best.h)) {
			best = t
		}
	}
	return best
}

// heifDecodeThumb decodes thumbnail t of a HEIF/AVIF file. Both libraries
// decode only the primary item, and libavif skips thumbnails, so the copy
// they are given names t primary and its thmb reference box gets a type
// neither library knows.
func heifDecodeThumb(ctx context.Context, data []byte, info *heifInfo, t *heifThumb) (image.Image, error) {
	d := bytes.Clone(data)
	if info.pitmWide {
		binary.BigEndian.PutUint32(d[info.pitmAt:], t.id)
	} else {
		binary.BigEndian.PutUint16(d[info.pitmAt:], uint16(t.id))
	}
	copy(d[t.refAt:], "xthm")
	ti := &heifInfo{itemType: t.itemType, heifProps: t.heifProps, edits: info.edits}
	img, err := safely(func() (image.Image, error) { return heifDecodeItem(ctx, d, ti) })
	if err != nil {
		return nil, err
	}
	// The decoders report the size of the item they decode (libheif's
	// after clap), which must be the one thumbFor chose it for.
	w, h := orientDims(t.w, t.h, t.orient)
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		return nil, fmt.Errorf("thumbnail is %dx%d, its ispe says %dx%d", b.Dx(), b.Dy(), w, h)
	}
	return img, nil
}
