//go:build !amd64 || purego

package preprocess

// hpassSIMD reports whether hpassPlanar runs here: only on amd64 with AVX2.
const hpassSIMD = false

func deinterleaveRGB(rp, gp, bp, src *byte, n int) { panic("preprocess: no SIMD deinterleave here") }

func hpassPlanarAVX2(dst, planes *byte, pstride int, starts *int32, w *int16, kw, n int, prec uint) {
	panic("preprocess: no SIMD horizontal pass here")
}

func vaccAVX2(acc *int32, src *byte, n int, w int32) { panic("preprocess: no SIMD accumulation here") }
