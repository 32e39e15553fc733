package search

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkDotHi1024(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	q := randVec(r, 1024, 1)
	hi := make([]byte, 2048)
	for i := range hi {
		hi[i] = byte(r.Uint32())
	}
	b.SetBytes(2048)
	for b.Loop() {
		dotHi(hi, q)
	}
}

func BenchmarkDot32x1024(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	q, v := randVec(r, 1024, 1), randVec(r, 1024, 1)
	b.SetBytes(4096)
	for b.Loop() {
		dot32(q, v)
	}
}

func BenchmarkDotHiGeneric1024(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	q := randVec(r, 1024, 1)
	hi := make([]byte, 2048)
	for i := range hi {
		hi[i] = byte(r.Uint32())
	}
	b.SetBytes(2048)
	for b.Loop() {
		dotHiGeneric(hi, q)
	}
}
