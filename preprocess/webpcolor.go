package preprocess

import "image"

// webpToRGB converts a lossy WebP's 4:2:0 planes to packed RGB the way
// libwebp's default decoder does (which is what Pillow returns): "fancy"
// chroma upsampling, a 9-3-3-1 filter evaluated in two rounded steps on
// pairs of output rows, then webpYUVToRGB. The first row, and the last of an
// even-height picture, use one chroma row on its own. It returns false for
// anything but a 4:2:0 image at the origin (what x/image/webp produces).
func webpToRGB(out []byte, m *image.YCbCr) bool {
	if m.Rect.Min != (image.Point{}) || m.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		return false
	}
	w, h := m.Rect.Dx(), m.Rect.Dy()
	cw, ch := (w+1)/2, (h+1)/2
	u, v := make([]byte, w), make([]byte, w)
	for y := 0; y < h; y++ {
		// Output row y lies between chroma rows top and cur; odd rows are
		// the upper row of a pair, nearer top.
		k := (y + 1) / 2
		top, cur, upper := k-1, k, y%2 == 1
		if y == 0 || k >= ch {
			top, cur = min(k, ch-1), min(k, ch-1)
		}
		row := func(p []byte, r int) []byte { return p[r*m.CStride:][:cw] }
		webpUpsampleRow(u, row(m.Cb, top), row(m.Cb, cur), upper)
		webpUpsampleRow(v, row(m.Cr, top), row(m.Cr, cur), upper)
		yrow := m.Y[y*m.YStride:][:w]
		dst := out[y*w*3 : (y+1)*w*3]
		for x, yy := range yrow {
			d := dst[x*3 : x*3+3 : x*3+3]
			d[0], d[1], d[2] = webpYUVToRGB(yy, u[x], v[x])
		}
	}
	return true
}

// webpUpsampleRow fills out (one output row) from the chroma rows t (above)
// and c (below), weighting t 3:1 when upper, else c.
func webpUpsampleRow(out, t, c []byte, upper bool) {
	w := len(out)
	near, far := c, t
	if upper {
		near, far = t, c
	}
	out[0] = byte((3*int32(near[0]) + int32(far[0]) + 2) >> 2)
	last := (w - 1) >> 1
	for x := 1; x <= last; x++ {
		tl, tt := int32(t[x-1]), int32(t[x])
		l, cc := int32(c[x-1]), int32(c[x])
		avg := tl + tt + l + cc + 8
		d12 := (avg + 2*(tt+l)) >> 3 // favours the top-right/bottom-left diagonal
		d03 := (avg + 2*(tl+cc)) >> 3
		if upper {
			out[2*x-1] = byte((d12 + tl) >> 1)
			out[2*x] = byte((d03 + tt) >> 1)
		} else {
			out[2*x-1] = byte((d03 + l) >> 1)
			out[2*x] = byte((d12 + cc) >> 1)
		}
	}
	if w%2 == 0 {
		out[w-1] = byte((3*int32(near[last]) + int32(far[last]) + 2) >> 2)
	}
}
