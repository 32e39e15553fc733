package gemm_test

import (
	"fmt"

	"github.com/clipidx/clipidx/internal/gemm"
)

// A bf16 product: pack the weights once, then multiply. A caller offering
// bf16 to users first checks gemm.BF16Kernel and refuses bf16 when it
// returns an error (LinearBF16 would still run, on the slow portable
// kernel). The values here are exact in bfloat16, so every kernel prints the
// same.
func ExamplePool_LinearBF16() {
	w := &gemm.Matrix{Rows: 2, Cols: 3, Dtype: gemm.F32, F32: []float32{
		1, 2, 3, // row 0 of w [n=2, k=3]
		0.5, -1, 4,
	}}
	pw, err := gemm.PackBF16(w)
	if err != nil {
		fmt.Println(err)
		return
	}
	pool := gemm.NewPool(2)
	defer pool.Close()
	x := []float32{1, 1, 1, 2, 0, 0.25} // [m=2, k=3]
	y := make([]float32, 2*2)
	pool.LinearBF16(y, x, 2, pw, []float32{10, 20})
	fmt.Println(y)
	// Output: [16 23.5 12.75 22]
}
