package preprocess

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/png"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// format is an image container recognised by its first bytes, never by the
// file name.
type format uint8

const (
	fmtUnknown format = iota
	fmtJPEG
	fmtPNG
	fmtGIF
	fmtWebP
	fmtBMP
	fmtTIFF
	fmtHEIC // heif.go
	fmtAVIF // heif.go
	fmtRAW  // raw.go: through its embedded JPEG preview
	// Recognised but not decodable here.
	fmtJXL
	fmtPSD
)

var formatNames = [...]string{
	fmtUnknown: "unknown", fmtJPEG: "JPEG", fmtPNG: "PNG", fmtGIF: "GIF", fmtWebP: "WebP",
	fmtBMP: "BMP", fmtTIFF: "TIFF", fmtHEIC: "HEIC/HEIF", fmtAVIF: "AVIF", fmtJXL: "JPEG XL",
	fmtRAW: "camera RAW", fmtPSD: "Photoshop PSD",
}

func (f format) String() string { return formatNames[f] }

// formatIDs are the short names Formats reports.
var formatIDs = [...]string{
	fmtJPEG: "jpeg", fmtPNG: "png", fmtGIF: "gif", fmtWebP: "webp", fmtBMP: "bmp", fmtTIFF: "tiff",
	fmtHEIC: "heic", fmtAVIF: "avif", fmtRAW: "raw", fmtJXL: "jxl", fmtPSD: "psd",
}

// Formats returns the short names, sorted, of the image formats this build
// decodes: "avif", "bmp", "gif", "heic", "jpeg", "png", "raw" (camera RAW
// through its embedded JPEG preview), "tiff", "webp" and "webp-anim"
// (animated WebP, by its first frame); "heic" and "avif" only where their
// embedded decoders are built. An entry names a feature of a format, like
// webp-anim, when the decoder learned it: failures recorded by a build
// whose list lacked it are retried. A recognised format it
// does not decode (JPEG XL, Photoshop), or a feature of one it does that
// its decoder lacks (a CMYK TIFF), fails with ErrUnsupported. An index
// records this list beside each failure, so that a later build that
// decodes more can retry what it may now read.
func Formats() []string {
	var out []string
	for f := fmtJPEG; int(f) < len(formatIDs); f++ {
		if f.decodable() {
			out = append(out, formatIDs[f])
		}
	}
	if fmtWebP.decodable() {
		out = append(out, "webp-anim") // animated WebP, its first frame (webpanim.go)
	}
	slices.Sort(out)
	return out
}

// decodable reports whether decodeImage decodes format f.
func (f format) decodable() bool {
	switch f {
	case fmtJPEG, fmtRAW: // their own decoders (jpeg.go, raw.go)
		return true
	case fmtHEIC, fmtAVIF:
		return errNoWASM == nil
	}
	_, ok := decoders[f]
	return ok
}

// rawExtensions are camera RAW formats built on TIFF: their content sniffs as
// TIFF (or the first IFD holds a thumbnail), so the extension decides.
var rawExtensions = map[string]string{
	".nef": "Nikon NEF", ".nrw": "Nikon NRW", ".arw": "Sony ARW", ".srf": "Sony SRF",
	".sr2": "Sony SR2", ".dng": "Adobe DNG", ".cr2": "Canon CR2", ".pef": "Pentax PEF",
	".erf": "Epson ERF", ".3fr": "Hasselblad 3FR", ".mef": "Mamiya MEF", ".mos": "Leaf MOS",
	".rwl": "Leica RWL", ".iiq": "Phase One IIQ", ".kdc": "Kodak KDC", ".dcr": "Kodak DCR",
	".srw": "Samsung SRW", ".orf": "Olympus ORF", ".rw2": "Panasonic RW2", ".raf": "Fujifilm RAF",
	".cr3": "Canon CR3", ".x3f": "Sigma X3F",
}

// sniff recognises the container from the first bytes. For unsupported
// formats detail names the exact kind (e.g. "Canon CR2").
func sniff(d []byte, name string) (f format, detail string) {
	has := func(off int, s string) bool { return len(d) >= off+len(s) && string(d[off:off+len(s)]) == s }
	switch {
	case has(0, "\xff\xd8\xff"):
		return fmtJPEG, ""
	case has(0, "\x89PNG\r\n\x1a\n"):
		return fmtPNG, ""
	case has(0, "GIF87a"), has(0, "GIF89a"):
		return fmtGIF, ""
	case has(0, "RIFF") && has(8, "WEBP"):
		return fmtWebP, ""
	case has(0, "BM") && len(d) >= 26:
		return fmtBMP, ""
	case has(0, "II*\x00") && has(8, "CR\x02"):
		return fmtRAW, "Canon CR2"
	case has(0, "IIRO"), has(0, "IIRS"), has(0, "MMOR"):
		return fmtRAW, "Olympus ORF"
	case has(0, "IIU\x00"):
		return fmtRAW, "Panasonic RW2"
	case has(0, "FUJIFILMCCD-RAW"):
		return fmtRAW, "Fujifilm RAF"
	case has(0, "FOVb"):
		return fmtRAW, "Sigma X3F"
	case has(0, "II*\x00"), has(0, "MM\x00*"):
		if kind, ok := rawExtensions[strings.ToLower(filepath.Ext(name))]; ok {
			return fmtRAW, kind
		}
		if tiffHasTag(d, 0xc612) { // DNGVersion
			return fmtRAW, "Adobe DNG"
		}
		return fmtTIFF, ""
	case has(4, "ftyp"):
		return sniffBMFF(d)
	case has(0, "\xff\x0a"), has(0, "\x00\x00\x00\x0cJXL \r\n\x87\n"):
		return fmtJXL, ""
	case has(0, "8BPS"):
		return fmtPSD, ""
	}
	return fmtUnknown, ""
}

// sniffBMFF tells HEIF, AVIF and CR3 apart by the ISO-BMFF ftyp brands.
func sniffBMFF(d []byte) (format, string) {
	size := int(binary.BigEndian.Uint32(d))
	if size < 16 || size > len(d) {
		size = min(len(d), 64)
	}
	brands := map[string]bool{}
	for i := 8; i+4 <= size; i += 4 {
		if i == 12 {
			continue // minor version
		}
		brands[string(d[i:i+4])] = true
	}
	switch {
	case brands["crx "]:
		return fmtRAW, "Canon CR3"
	case brands["avif"], brands["avis"]:
		return fmtAVIF, ""
	case brands["heic"], brands["heix"], brands["hevc"], brands["hevx"], brands["heim"],
		brands["heis"], brands["mif1"], brands["msf1"]:
		return fmtHEIC, ""
	}
	return fmtUnknown, ""
}

// tiffHasTag reports whether IFD0 of a TIFF file holds tag.
func tiffHasTag(t []byte, tag uint16) bool {
	if len(t) < 8 {
		return false
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if t[0] == 'M' {
		bo = binary.BigEndian
	}
	off := int64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > int64(len(t)) {
		return false
	}
	n := int64(bo.Uint16(t[off:]))
	for k := int64(0); k < n && off+2+12*k+12 <= int64(len(t)); k++ {
		if bo.Uint16(t[off+2+12*k:]) == tag {
			return true
		}
	}
	return false
}

type decoder struct {
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var decoders = map[format]decoder{
	fmtPNG:  {png.DecodeConfig, png.Decode},
	fmtGIF:  {gif.DecodeConfig, gif.Decode}, // gif.Decode returns the first frame
	fmtWebP: {webp.DecodeConfig, webp.Decode},
	fmtBMP:  {bmp.DecodeConfig, bmp.Decode},
	fmtTIFF: {tiff.DecodeConfig, tiff.Decode},
	fmtHEIC: {heifConfig, heifDecode},
	fmtAVIF: {heifConfig, heifDecode},
}

// decodeImage decodes data after checking its header against maxPixels. It
// returns the format for the colour conversion and the EXIF lookup.
func decodeImage(data []byte, name string, maxPixels int64) (image.Image, format, error) {
	return decodeImageWindow(data, name, maxPixels, nil)
}

// decodeImageWindow is decodeImage for a reader of part of the image:
// window, given the size of the image as shown, returns the rectangle
// that will be read; a decoder may leave the pixels outside it undefined
// (heifDecodeWindow). nil reads the whole image.
func decodeImageWindow(data []byte, name string, maxPixels int64, window func(w, h int) image.Rectangle) (image.Image, format, error) {
	if len(data) == 0 {
		return nil, fmtUnknown, fmt.Errorf("decode %s: %w: empty file", name, ErrCorrupt)
	}
	f, detail := sniff(data, name)
	if f == fmtRAW {
		img, err := decodeRAW(data, name, detail, maxPixels)
		return img, f, err
	}
	if f == fmtJPEG {
		return decodeJPEGImage(data, name, maxPixels) // jpeg.go: our own decoder, as Pillow decodes
	}
	dec, ok := decoders[f]
	if !ok {
		if f == fmtUnknown {
			return nil, f, fmt.Errorf("decode %s: %w (%d bytes starting %q)", name, ErrUnknownFormat, len(data), prefix(data))
		}
		if detail == "" {
			detail = f.String()
		}
		return nil, f, fmt.Errorf("decode %s: %w: %s", name, ErrUnsupported, detail)
	}
	cfg, err := safely(func() (image.Config, error) { return dec.config(bytes.NewReader(data)) })
	if err != nil {
		if u, ok := unsupportedFeature(data, f, err); ok {
			return nil, f, fmt.Errorf("decode %s: %w: %s", name, ErrUnsupported, u)
		}
		return nil, f, fmt.Errorf("decode %s: %w: %s header: %w", name, ErrCorrupt, f, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, f, fmt.Errorf("decode %s: %w: %s image is %dx%d", name, ErrCorrupt, f, cfg.Width, cfg.Height)
	}
	if pixelsOver(cfg.Width, cfg.Height, maxPixels) {
		return nil, f, tooLarge(name, cfg.Width, cfg.Height, maxPixels)
	}
	img, err := safely(func() (image.Image, error) {
		if f == fmtWebP && webpAnimated(data) {
			return webpFirstFrame(data) // webpanim.go
		}
		if f == fmtHEIC && window != nil {
			info, err := heifHeader(data)
			if err != nil {
				return nil, err
			}
			return heifDecodeWindow(context.Background(), data, info, window(cfg.Width, cfg.Height))
		}
		return dec.decode(bytes.NewReader(data))
	})
	if err != nil {
		if u, ok := unsupportedFeature(data, f, err); ok {
			return nil, f, fmt.Errorf("decode %s: %w: %s", name, ErrUnsupported, u)
		}
		return nil, f, fmt.Errorf("decode %s: %w: %s: %w", name, ErrCorrupt, f, err)
	}
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 || pixelsOver(b.Dx(), b.Dy(), maxPixels) {
		return nil, f, fmt.Errorf("decode %s: %w: decoded %s image is %dx%d", name, ErrCorrupt, f, b.Dx(), b.Dy())
	}
	if f == fmtGIF {
		fixGIFTransparent(img, data)
	}
	return img, f, nil
}

// unsupportedFeature tells a valid file that uses a feature its decoder
// lacks (a TIFF in CMYK, with JPEG compression or float samples:
// tiff.UnsupportedError) from a damaged one, and names the feature. It
// matters: an unsupported format is retried by a later build that reads
// more, a corrupt file only once it changes.
func unsupportedFeature(data []byte, f format, err error) (string, bool) {
	var u tiff.UnsupportedError
	if f != fmtTIFF || !errors.As(err, &u) {
		return "", false
	}
	feature := strings.TrimPrefix(u.Error(), "tiff: unsupported feature: ")
	tag, names, what := uint16(0), map[uint64]string(nil), ""
	switch {
	case strings.HasPrefix(feature, "compression"):
		tag, names, what = 0x0103, tiffCompressions, "compression"
	case feature == "color model":
		tag, names, what = 0x0106, tiffPhotometrics, "colour model"
	case feature == "sample format":
		tag, names, what = 0x0153, tiffSampleFormats, "samples"
	}
	if v, ok := tiffIFD0Uint(data, tag); ok && names[v] != "" {
		feature = names[v] + " " + what
	}
	return "TIFF with " + feature, true
}

// Names of the TIFF tag values x/image/tiff refuses, for messages.
var (
	tiffCompressions = map[uint64]string{
		2: "CCITT RLE", 6: "old-style JPEG", 7: "JPEG", 34712: "JPEG 2000", 34925: "LZMA",
		50000: "Zstandard", 50001: "WebP", 52546: "JPEG XL",
	}
	tiffPhotometrics = map[uint64]string{
		4: "transparency mask", 5: "CMYK", 6: "YCbCr", 8: "CIELab", 9: "ICCLab", 10: "ITULab",
		32803: "CFA", 32844: "LogL", 32845: "LogLuv", 34892: "linear raw",
	}
	tiffSampleFormats = map[uint64]string{2: "signed integer", 3: "floating-point", 4: "undefined", 5: "complex integer", 6: "complex floating-point"}
)

// tiffIFD0Uint reads the first value of tag in IFD0 of a TIFF file.
func tiffIFD0Uint(d []byte, tag uint16) (uint64, bool) {
	w, err := newTIFFWalker(d)
	if err != nil || tag == 0 {
		return 0, false
	}
	es, _, _ := w.entries(0, uint64(w.ifd0))
	for _, e := range es {
		if e.tag == tag {
			return w.uint(e, 0)
		}
	}
	return 0, false
}

// pixelsOver reports whether a w x h image (w, h > 0) has more than limit
// pixels. It divides rather than multiplies: header sizes are read from the
// file, and an AVIF's or HEIC's ispe holds two 32-bit numbers whose product
// can overflow an int64 (0xC0000000 squared wraps to a negative number).
func pixelsOver(w, h int, limit int64) bool {
	if w <= 0 || h <= 0 {
		return false
	}
	return int64(w) > limit/int64(h)
}

// tooLarge is the error for a w x h image header over maxPixels.
func tooLarge(name string, w, h int, maxPixels int64) error {
	px := float64(w) * float64(h) // in float64: w*h may overflow an int64
	return fmt.Errorf("decode %s: %w: %dx%d is %.1f megapixels, over the limit of %.1f megapixels",
		name, ErrTooLarge, w, h, px/1e6, float64(maxPixels)/1e6)
}

// safely runs a decoder and turns a panic into an error: a decoder bug on
// hostile input must not take the process down.
func safely[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return fn()
}

// prefix quotes the first bytes of a file for an error message.
func prefix(d []byte) []byte {
	return d[:min(len(d), 12)]
}
