package npu

import (
	"encoding/binary"
	"sync" // Host-side math of the NPU replay, in float32 storage with the reference
	// forward's helpers (ref.go: refLayerNorm, refLinear; weights.go: f32ToBF16
	// rounds to nearest even, bf16ToF32).

	"github.com/clipidx/clipidx/clipnpu/core"
)

// onesZeros returns cached all-ones and all-zeros vectors of length n, the
// weight and bias of an affine-free LayerNorm.
var onesZeros = func() func(n int) ([]float32, []float32) {
	var mu sync.Mutex
	cache := map[int][2][]float32{}
	return func(n int) ([]float32, []float32) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := cache[n]; ok {
			return c[0], c[1]
		}
		ones := make([]float32, n)
		for i := range ones {
			ones[i] = 1
		}
		zeros := make([]float32, n)
		cache[n] = [2][]float32{ones, zeros}
		return ones, zeros
	}
}()

// lnNoAffine writes LayerNorm(x) without affine into y, for x, y [m, n]
// (rows split across threads).
func lnNoAffine(y, x []float32, m, n int, eps float32, threads int) {
	ones, zeros := onesZeros(n)
	core.Parallel(m, threads, func(lo, hi int) {
		core.LayerNorm(y[lo*n:hi*n], x[lo*n:hi*n], hi-lo, n, ones, zeros, eps)
	})
}

// putBF16 rounds src to bf16 (nearest even) into dst, little-endian.
func putBF16(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], core.F32ToBF16(v))
	}
}

// getBF16 widens little-endian bf16 src into dst.
func getBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = core.BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// roundBF16 rounds v to the nearest bf16 value, in place.
func roundBF16(v []float32) {
	for i, x := range v {
		v[i] = core.BF16ToF32(core.F32ToBF16(x))
	}
}

// patchRows cuts images px [n, 3, S, S] into patch rows [n·G·G, 3·P·P]:
// rows (image, py, px), columns (channel, ky, kx), the conv weight's order.
func patchRows(px []float32, n, S, P int) []float32 {
	G := S / P
	K := 3 * P * P
	out := make([]float32, n*G*G*K)
	for im := 0; im < n; im++ {
		src := px[im*3*S*S:]
		for py := 0; py < G; py++ {
			for pxi := 0; pxi < G; pxi++ {
				row := out[((im*G+py)*G+pxi)*K:]
				for ch := 0; ch < 3; ch++ {
					for ky := 0; ky < P; ky++ {
						s := src[ch*S*S+(py*P+ky)*S+pxi*P:]
						copy(row[ch*P*P+ky*P:ch*P*P+ky*P+P], s[:P])
					}
				}
			}
		}
	}
	return out
}
