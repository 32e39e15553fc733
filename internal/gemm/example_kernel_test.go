package gemm_test

import (
	"fmt"
	"strings"

	"github.com/clipidx/clipidx/internal/gemm"
)

// Choosing the float32 kernel by name, as cmd/clipidx does with
// CLIPIDX_GEMM_KERNEL; "auto" restores the default for the CPU.
func ExampleSetKernel() {
	if err := gemm.SetKernel("go"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(gemm.Kernel(), "portable Go float32, 6x16 tile"))
	err := gemm.SetKernel("sse9")
	fmt.Println(err != nil)
	if err := gemm.SetKernel("auto"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// true
	// true
}
