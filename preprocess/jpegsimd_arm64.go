//go:build arm64 && !purego

package preprocess

// The JPEG kernels in NEON (jpegsimd_arm64.s, written by
// jpegsimd_arm64_gen.py), bit-exact with their reference loops: the same
// integer operations, in 32-bit lanes where the reference could wrap. ASIMD
// is part of every arm64 CPU, so there is no feature check. The kernels are
// tested under qemu user emulation; their speed on arm64 hardware has not
// been measured.

// yccRGBNEON converts n pixels, n a multiple of 16, writing 3n bytes.
//
//go:noescape
func yccRGBNEON(dst, y, cb, cr *byte, n int)

// jpegRow converts one row of luma and full-width chroma to packed RGB.
func jpegRow(dst, y, cb, cr []byte) {
	n := len(y)
	v := n &^ 15
	if v == 0 {
		jpegRowGeneric(dst, y, cb, cr)
		return
	}
	_, _, _ = dst[3*n-1], cb[n-1], cr[n-1] // the kernel trusts these lengths
	yccRGBNEON(&dst[0], &y[0], &cb[0], &cr[0], v)
	if v < n {
		jpegRowGeneric(dst[3*v:], y[v:], cb[v:n], cr[v:n])
	}
}

//go:noescape
func idctNEON(in *[64]int32, dst *byte, stride int)

// idct transforms a dequantized block (natural order) into 8x8 samples at
// dst with the given stride.
func idct(in *[64]int32, dst []byte, stride int) {
	_ = dst[7*stride+7] // the kernel writes 8 rows of 8
	idctNEON(in, &dst[0], stride)
}

// h2v2NEON writes out[2i], out[2i+1] for i in 1..m (m a multiple of 16)
// from near and far, reading near[0..m+1] and far[0..m+1]; out points at
// the row's third byte.
//
//go:noescape
func h2v2NEON(out, near, far *byte, m int)

// h2v2Row is libjpeg's h2v2 fancy upsampling of one output row from the
// nearest chroma row and the next nearest; len(near) > 2.
func h2v2Row(out, near, far []byte, sum []int32) {
	n := len(near)
	m := (n - 2) &^ 15
	if m == 0 {
		h2v2RowGeneric(out, near, far, sum)
		return
	}
	out, far = out[:2*n], far[:n]
	h2v2NEON(&out[2], &near[0], &far[0], m)
	h2v2Edges(out, near, far, 1+m)
}
