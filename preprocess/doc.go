// Package preprocess decodes image files and turns them into the CLIP model
// input, a float32 tensor [3, CropHeight, CropWidth] (3x224x224 for
// ViT-H/14), bit for bit as Hugging Face's CLIPImageProcessor (transformers
// v5, torchvision backend) computes it from a PIL image. It is a leaf: it
// imports no other clipidx package.
//
// The pipeline, one file per step, follows ../shared/docs/preprocess-spec.md:
//
//	bytes ─ decode.go ─ sniff the format by content (never by name), check the
//	   │                header against Options.MaxPixels, decode (panics
//	   │                become ErrCorrupt)
//	   ├─ rgb.go, jpegcolor.go, webpcolor.go ─ packed 8-bit RGB [h, w, 3] as
//	   │                Pillow's convert("RGB") gives it
//	   ├─ exif.go, orient.go ─ EXIF orientation (unless Options.IgnoreEXIF)
//	   ├─ resize.go ─ shortest-edge size, torch's uint8 antialiased bicubic
//	   │                (int16 weights, per-pass precision, horizontal pass
//	   │                first), center crop; only the cropped window is computed
//	   └─ processor.go ─ fused float32 (x - 255·mean) / (255·std), CHW
//
// Colour follows Pillow: grayscale is copied to R, G and B; alpha is dropped
// without compositing (the colour stored under a transparent pixel is used);
// palettes are expanded, ignoring transparency (Go's GIF decoder blanks the
// transparent entry, so it is restored from the file); CMYK uses Pillow's
// cmyk2rgb. JPEGs are decoded by this package's own decoder (jpeg*.go)
// exactly as Pillow's libjpeg-turbo decodes them: its integer IDCT, "fancy"
// chroma upsampling, fixed-point YCbCr matrix and progressive block
// smoothing, so they are bit-exact with Pillow; lossy WebP is converted as
// libwebp does it, also bit-exact. A JPEG cut short is refused, as Pillow
// refuses it ("image file is truncated").
//
// Deliberate differences from Hugging Face:
//   - 16-bit samples become 8-bit by their high byte. Pillow clips 16-bit
//     grayscale at 255 (turning real photos white) and takes the high byte
//     of 16-bit RGB, which this matches.
//   - EXIF orientation is applied by default (a phone photo must not be
//     embedded sideways); HF ignores the tag for PIL images, so parity checks
//     set Options.IgnoreEXIF.
//   - HEIC/HEIF and AVIF are decoded with the WebAssembly builds of libheif
//     and libavif (heif.go); camera RAW files through their largest
//     embedded JPEG preview (raw.go). JPEG XL and PSD files are recognised
//     and refused with ErrUnsupported naming the format, as are TIFFs using
//     a feature x/image/tiff lacks (CMYK, JPEG compression, float samples),
//     naming the feature.
//   - An animated WebP gives its first frame on its canvas (webpanim.go),
//     bit-exact with Pillow's first frame, as an animated GIF gives its
//     first frame.
//   - An arithmetic-coded JPEG larger than Pillow's 64 KB read block is
//     decoded (as libjpeg-turbo's djpeg decodes it); Pillow fails on it.
//   - A GIF whose first frame does not cover the logical screen gives that
//     frame alone (Pillow returns an image of the logical screen size; not
//     reproduced, rare in photo collections).
//
// A Processor is safe for concurrent use; run one goroutine per core. It
// reuses its large buffers between calls. A 12-megapixel JPEG costs about
// what image/jpeg's decode alone does, in all: the JPEG decoder, colour
// conversion included, takes 0.6-0.8x of image/jpeg's CPU time (see
// BenchmarkJPEGDecoder12MP and BenchmarkJPEGStdlib12MP).
//
// For display, Decode gives the full image and DecodeReduced (reduced.go)
// a cheaper one near the size it will be shown at: JPEGs DCT-scaled as
// libjpeg does (jpegscale.go), HEIC/AVIF through a thumbnail item, RAW
// through a smaller preview; it stops when its context is cancelled.
//
// Version names the pixel output; store it beside vectors made from it.
package preprocess
