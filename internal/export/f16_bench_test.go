package export

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkF16 converts 1024 values of a unit vector (one row).
func BenchmarkF16(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	v := make([]float32, 1024)
	for i := range v {
		v[i] = float32(r.NormFloat64() / 32)
	}
	dst := make([]byte, 0, 2048)
	b.SetBytes(2048)
	for b.Loop() {
		dst = encodeRow(dst[:0], v, 2)
	}
}
