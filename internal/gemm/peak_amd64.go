//go:build amd64 && !purego

package gemm

// fmaPeakLoop returns the register-only FMA loop PeakF32 runs (n
// iterations, returning 4n) and the flops of one iteration.
func fmaPeakLoop() (func(n int) float32, float64) {
	switch {
	case useAVX512:
		return fmaPeakAVX512, 2 * 28 * 16 * 2
	case useAVX2:
		return fmaPeakAVX2, avx2PeakFlops
	}
	return nil, 0
}

// fmaPeakAVX512 runs n iterations of 56 zmm VFMADD231PS on 28
// accumulators and returns 4n (gen_amd64.py).
//
//go:noescape
func fmaPeakAVX512(n int) float32

// fmaPeakAVX2 runs n iterations of 24 ymm VFMADD231PS on 12 accumulators
// and returns 4n.
//
//go:noescape
func fmaPeakAVX2(n int) float32

// avx2PeakFlops are the flops of one iteration of fmaPeakAVX2.
const avx2PeakFlops = 2 * 12 * 8 * 2
