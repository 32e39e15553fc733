//go:build !amd64 || purego

package gemm

import "errors"

// errNoBF16Build is why this build has no bf16 kernel: the AMX and
// AVX512_BF16 kernels are amd64 assembly, left out under the purego tag.
var errNoBF16Build = errors.New("bf16 needs AVX512_BF16 or AMX-BF16 kernels, which this build does not have (amd64 without the purego tag only)")

func bf16AMX() (*bf16Impl, error)    { return nil, errNoBF16Build }
func bf16AVX512() (*bf16Impl, error) { return nil, errNoBF16Build }
func bf16Missing() error             { return errNoBF16Build }

// roundBF16Slice stores RoundBF16 of each src element in dst (as long).
func roundBF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = RoundBF16(f)
	}
}

// roundBF16Tiled stores RoundBF16 of src[q] in dst[q/32·512 + q%32]: one
// row of AMX A tiles (tiles of 16 rows of 32, 512 elements apart).
func roundBF16Tiled(dst []uint16, src []float32) {
	for q, f := range src {
		dst[q/32*512+q%32] = RoundBF16(f)
	}
}
