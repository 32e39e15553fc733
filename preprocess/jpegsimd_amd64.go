//go:build amd64 && !purego

package preprocess

import "golang.org/x/sys/cpu"

// The JPEG kernels in AVX2 (jpegsimd_amd64.s), bit-exact with their
// reference loops: the same integer operations in 32-bit lanes.

var jpegAVX2 = cpu.X86.HasAVX2

// yccRGBAVX2 converts n pixels, n a multiple of 8, writing 3n bytes.
//
//go:noescape
func yccRGBAVX2(dst, y, cb, cr *byte, n int)

// jpegRow converts one row of luma and full-width chroma to packed RGB.
func jpegRow(dst, y, cb, cr []byte) {
	n := len(y)
	if !jpegAVX2 || n < 8 {
		jpegRowGeneric(dst, y, cb, cr)
		return
	}
	_, _, _ = dst[3*n-1], cb[n-1], cr[n-1] // the kernel trusts these lengths
	v := n &^ 7
	yccRGBAVX2(&dst[0], &y[0], &cb[0], &cr[0], v)
	if v < n {
		jpegRowGeneric(dst[3*v:], y[v:], cb[v:n], cr[v:n])
	}
}

// idctAVX2 is idct with ws as scratch.
//
//go:noescape
func idctAVX2(in, ws *[64]int32, dst *byte, stride int)

// idct transforms a dequantized block (natural order) into 8x8 samples at
// dst with the given stride.
func idct(in *[64]int32, dst []byte, stride int) {
	if !jpegAVX2 {
		idctGeneric(in, dst, stride)
		return
	}
	_ = dst[7*stride+7] // the kernel writes 8 rows of 8
	var ws [64]int32
	idctAVX2(in, &ws, &dst[0], stride)
}

// h2v2AVX2 writes out[2i], out[2i+1] for i in 1..m (m a multiple of 16)
// from near and far, reading near[0..m+1] and far[0..m+1]; out points at
// the row's third byte.
//
//go:noescape
func h2v2AVX2(out, near, far *byte, m int)

// h2v2Row is libjpeg's h2v2 fancy upsampling of one output row from the
// nearest chroma row and the next nearest; len(near) > 2.
func h2v2Row(out, near, far []byte, sum []int32) {
	n := len(near)
	m := (n - 2) &^ 15
	if !jpegAVX2 || m == 0 {
		h2v2RowGeneric(out, near, far, sum)
		return
	}
	out, far = out[:2*n], far[:n]
	h2v2AVX2(&out[2], &near[0], &far[0], m)
	h2v2Edges(out, near, far, 1+m)
}
