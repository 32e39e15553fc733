package preprocess

import (
	"image"
)

// Decode decodes an encoded image held in memory for display (thumbnails,
// terminal previews): the format is found from the content, the header is
// checked against maxPixels (0 = DefaultMaxPixels) before any pixel memory
// is allocated, and the EXIF orientation is applied unless ignoreEXIF. The
// pixels are the same packed RGB the model's preprocessing starts from
// (alpha dropped, JPEG and WebP colour converted as for the model), as an
// opaque *image.RGBA. name is used in error messages only (and to tell
// camera RAW files apart by extension); errors wrap ErrUnsupported,
// ErrUnknownFormat, ErrTooLarge or ErrCorrupt as Processor.Bytes's do.
func Decode(data []byte, name string, maxPixels int, ignoreEXIF bool) (*image.RGBA, error) {
	limit := int64(maxPixels)
	if limit <= 0 {
		limit = DefaultMaxPixels
	}
	img, f, err := decodeImage(data, name, limit)
	if err != nil {
		return nil, err
	}
	return displayRGBA(img, f, data, ignoreEXIF), nil
}

// displayRGBA converts a decoded image to packed RGB as for the model,
// applies the EXIF orientation of data unless ignoreEXIF, and returns it
// as an opaque *image.RGBA.
func displayRGBA(img image.Image, f format, data []byte, ignoreEXIF bool) *image.RGBA {
	rgb, w, h := toRGB(nil, img, yccFor(f))
	if o := exifOrientation(data, f); !ignoreEXIF && o != 1 {
		rot := make([]byte, len(rgb))
		w, h = orient(rot, rgb, w, h, o)
		rgb = rot
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	px := out.Pix
	for i, j := 0, 0; i < len(rgb); i, j = i+3, j+4 {
		px[j], px[j+1], px[j+2], px[j+3] = rgb[i], rgb[i+1], rgb[i+2], 0xff
	}
	return out
}
