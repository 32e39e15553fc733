package gemm_test

import (
	"fmt"

	"github.com/clipidx/clipidx/internal/gemm"
)

// A linear layer with bfloat16 weights: y = x·wᵀ + bias.
func ExamplePool_Linear() {
	pool := gemm.NewPool(2)
	defer pool.Close()
	// w is [out=2, in=3] in bfloat16 bits: rows (1, 2, 3) and (-1, 0, 0.5).
	w := &gemm.Matrix{Rows: 2, Cols: 3, Dtype: gemm.BF16,
		U16: []uint16{0x3f80, 0x4000, 0x4040, 0xbf80, 0x0000, 0x3f00}}
	x := []float32{1, 1, 1, 2, 0, 4} // [m=2, in=3]
	y := make([]float32, 2*2)
	pool.Linear(y, x, 2, w, []float32{10, 20})
	fmt.Println(y)
	// Output: [16 19.5 24 20]
}

// Attention scores of one head: s = scale · q·kᵀ.
func ExamplePool_MatMul() {
	pool := gemm.NewPool(1)
	defer pool.Close()
	q := []float32{1, 0, 0, 1}       // [2 tokens, d=2]
	k := []float32{1, 2, 3, 4, 5, 6} // [3 tokens, d=2]
	s := make([]float32, 2*3)
	pool.MatMul(s, 3, q, 2, k, 2, 2, 3, 2, true, 0.5)
	fmt.Println(s)
	// Output: [0.5 1.5 2.5 1 2 3]
}
