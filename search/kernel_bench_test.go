package search

import (
	"math/rand/v2"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// BenchmarkDotHi1024 scores one row with the current kernel.
func BenchmarkDotHi1024(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	q := randVec(r, 1024, 1)
	hi := bf16Vectors(r, 1, 1024)
	h := newHiQuery(q)
	var out [1]float32
	b.SetBytes(2048)
	for b.Loop() {
		h.scoreRows(hi, out[:])
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
	hi := bf16Vectors(r, 1, 1024)
	b.SetBytes(2048)
	for b.Loop() {
		dotHiGeneric(hi, q)
	}
}

// BenchmarkScoreRows scores one chunk (256 rows × 1024, 512 KB: in L2)
// with each kernel: the arithmetic speed, memory aside.
func BenchmarkScoreRows(b *testing.B) {
	const rows, dim = 256, 1024
	r := rand.New(rand.NewPCG(1, 1))
	q := randVec(r, dim, 1)
	hi := bf16Vectors(r, rows, dim)
	out := make([]float32, rows)
	for _, k := range kernels() {
		b.Run(k.String(), func(b *testing.B) {
			old := kernel
			kernel = k
			defer func() { kernel = old }()
			h := newHiQuery(q)
			b.SetBytes(int64(len(hi)))
			for b.Loop() {
				h.scoreRows(hi, out)
			}
		})
	}
}

// bf16Vectors is rows random unit vectors of dim values rounded to
// bfloat16 as the index stores them (random bytes would hold subnormals,
// which cost the FMA kernels microcode assists that real data never sees).
func bf16Vectors(r *rand.Rand, rows, dim int) []byte {
	hi := make([]byte, 0, rows*dim*2)
	for range rows {
		v, _ := unit(randVec(r, dim, 1))
		for _, x := range v {
			h, _ := store.Split(x)
			hi = append(hi, byte(h), byte(h>>8))
		}
	}
	return hi
}
