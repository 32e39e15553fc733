package preprocess

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"

	"golang.org/x/image/webp"
)

// An animated WebP is indexed by its first frame, as an animated GIF is
// (x/image/webp decodes no animation). The WebP container specification
// (developers.google.com/speed/webp/docs/riff_container) lays it out as
//
//	RIFF size WEBP
//	  VP8X  flags (animation 0x02, alpha 0x10), canvas width-1, height-1 (24 bits each)
//	  ANIM  background colour, loop count
//	  ANMF  x/2, y/2, width-1, height-1, duration (24 bits each), flags;
//	        then the frame: [ALPH] VP8 or VP8L, and unknown chunks
//	  ANMF  ...
//
// The first frame is copied into a still WebP of its own size for
// x/image/webp and put at its offset on a transparent black canvas, as
// libwebp's WebPAnimDecoder (which Pillow uses) does: its first frame is a
// key frame, decoded over the zeroed canvas without blending, and the
// ANIM background colour is only a hint it ignores.

var errWebPAnim = errors.New("animated WebP")

// webpAnimated reports whether a RIFF WebP file is an animation: the
// animation flag of its VP8X chunk, which must come first, is set.
func webpAnimated(d []byte) bool {
	return len(d) >= 30 && string(d[12:16]) == "VP8X" && d[20]&0x02 != 0
}

// webpChunks calls fn with the id and payload of each RIFF chunk in d,
// until fn returns false; a chunk running past the end is an error.
func webpChunks(d []byte, fn func(id string, payload []byte) bool) error {
	for len(d) > 0 {
		if len(d) < 8 {
			return fmt.Errorf("%w: %d stray bytes after the last chunk", errWebPAnim, len(d))
		}
		n := uint64(binary.LittleEndian.Uint32(d[4:]))
		if n > uint64(len(d)-8) {
			return fmt.Errorf("%w: %q chunk of %d bytes runs past the end", errWebPAnim, d[:4], n)
		}
		if !fn(string(d[:4]), d[8:8+n]) {
			return nil
		}
		d = d[min(uint64(len(d)), 8+n+n&1):] // chunks are padded to even sizes
	}
	return nil
}

func uint24(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }

// webpFirstFrame decodes the first frame of an animated WebP onto its
// canvas. The caller has checked the canvas size (webp.DecodeConfig
// reports it) against the pixel limit.
func webpFirstFrame(d []byte) (image.Image, error) {
	cw, ch := uint24(d[24:])+1, uint24(d[27:])+1
	body := d[12:]
	if n := uint64(binary.LittleEndian.Uint32(d[4:])); n >= 4 && n-4 < uint64(len(body)) {
		body = body[:n-4] // what follows the RIFF chunk is not the file's
	}
	var anmf []byte
	err := webpChunks(body, func(id string, p []byte) bool {
		if id == "ANMF" {
			anmf = p
		}
		return anmf == nil
	})
	if err != nil {
		return nil, err
	}
	if len(anmf) < 16 {
		return nil, fmt.Errorf("%w: no frame", errWebPAnim)
	}
	x, y := 2*uint24(anmf[0:]), 2*uint24(anmf[3:])
	w, h := uint24(anmf[6:])+1, uint24(anmf[9:])+1
	if x+w > cw || y+h > ch {
		return nil, fmt.Errorf("%w: %dx%d frame at %d,%d outside the %dx%d canvas", errWebPAnim, w, h, x, y, cw, ch)
	}
	var alph, bits []byte
	var bitsID string
	err = webpChunks(anmf[16:], func(id string, p []byte) bool {
		switch id {
		case "ALPH":
			alph = p
		case "VP8 ", "VP8L":
			bits, bitsID = p, id
		}
		return bits == nil
	})
	if err != nil {
		return nil, err
	}
	if bits == nil {
		return nil, fmt.Errorf("%w: first frame has no VP8 or VP8L bitstream", errWebPAnim)
	}
	if bitsID == "VP8L" {
		alph = nil // VP8L carries its own alpha; libwebp ignores an ALPH beside it
	}
	frame, err := webp.Decode(bytes.NewReader(stillWebP(w, h, alph, bitsID, bits)))
	if err != nil {
		return nil, fmt.Errorf("%w: first frame: %w", errWebPAnim, err)
	}
	if fb := frame.Bounds(); fb.Dx() != w || fb.Dy() != h {
		return nil, fmt.Errorf("%w: first frame decodes to %dx%d, its header says %dx%d", errWebPAnim, fb.Dx(), fb.Dy(), w, h)
	}
	if x == 0 && y == 0 && w == cw && h == ch {
		return frame, nil // no canvas around it: keep the decoder's own image type
	}
	return onCanvas(frame, x, y, cw, ch), nil
}

// stillWebP wraps a frame's bitstream (and alpha) in a still WebP of the
// frame's size: VP8X, [ALPH], VP8 or VP8L.
func stillWebP(w, h int, alph []byte, bitsID string, bits []byte) []byte {
	chunk := func(out []byte, id string, p []byte) []byte {
		out = binary.LittleEndian.AppendUint32(append(out, id...), uint32(len(p)))
		out = append(out, p...)
		if len(p)%2 == 1 {
			out = append(out, 0)
		}
		return out
	}
	vp8x := make([]byte, 10)
	if alph != nil {
		vp8x[0] = 0x10
	}
	vp8x[4], vp8x[5], vp8x[6] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
	vp8x[7], vp8x[8], vp8x[9] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	out := append(make([]byte, 0, 40+len(alph)+len(bits)), "RIFF\x00\x00\x00\x00WEBP"...)
	out = chunk(out, "VP8X", vp8x)
	if alph != nil {
		out = chunk(out, "ALPH", alph)
	}
	out = chunk(out, bitsID, bits)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

// onCanvas puts a decoded frame at x, y on a transparent black cw x ch
// canvas, its colour converted as for a still WebP (libwebp's fancy
// upsampling of a lossy frame) and its alpha kept.
func onCanvas(frame image.Image, x, y, cw, ch int) *image.NRGBA {
	rgb, w, h := toRGB(nil, frame, yccBT601)
	alpha := func(i, j int) byte { return 0xff }
	switch m := frame.(type) {
	case *image.NYCbCrA:
		alpha = func(i, j int) byte { return m.A[m.AOffset(m.Rect.Min.X+i, m.Rect.Min.Y+j)] }
	case *image.NRGBA:
		alpha = func(i, j int) byte { return m.Pix[m.PixOffset(m.Rect.Min.X+i, m.Rect.Min.Y+j)+3] }
	}
	c := image.NewNRGBA(image.Rect(0, 0, cw, ch))
	for j := 0; j < h; j++ {
		dst := c.Pix[c.PixOffset(x, y+j):][:4*w]
		src := rgb[3*w*j:][:3*w]
		for i := 0; i < w; i++ {
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = src[3*i], src[3*i+1], src[3*i+2], alpha(i, j)
		}
	}
	return c
}
