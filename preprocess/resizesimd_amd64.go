//go:build amd64 && !purego

package preprocess

// The resize's horizontal pass in AVX2 (resizesimd_amd64.s), bit-exact
// with hpassRows: the same integer sums, in 16-bit products summed in
// pairs into 32-bit lanes.

// hpassSIMD reports whether hpassPlanar runs here.
var hpassSIMD = jpegAVX2

// deinterleaveRGB splits n packed-RGB pixels (n a multiple of 16) into
// the planes rp, gp and bp.
//
//go:noescape
func deinterleaveRGB(rp, gp, bp, src *byte, n int)

// hpassPlanarAVX2 computes n outputs of a horizontal pass from a row held
// as planes (see the assembly for the layout).
//
//go:noescape
func hpassPlanarAVX2(dst, planes *byte, pstride int, starts *int32, w *int16, kw, n int, prec uint)

// vaccAVX2 does acc[i] += int32(src[i]) * w for i < n, n a multiple of 16.
//
//go:noescape
func vaccAVX2(acc *int32, src *byte, n int, w int32)
