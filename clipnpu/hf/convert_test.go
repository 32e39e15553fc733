package hf

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// TestRoundF32 checks the parallel rounding against the scalar one on
// every chunk boundary, and the overflow report (the first bad element).
func TestRoundF32(t *testing.T) {
	for _, hw := range []bool{true, false} {
		if hw && !hasF16C {
			continue // no F16C in this build or on this CPU
		}
		t.Run(fmt.Sprintf("f16c=%v", hw), func(t *testing.T) {
			saved := hasF16C
			hasF16C = hw
			defer func() { hasF16C = saved }()
			testRoundF32(t)
		})
	}
}

func testRoundF32(t *testing.T) {
	src := make([]float32, 3*roundChunk+17)
	for i := range src {
		src[i] = float32(math.Sin(float64(i))) * float32(1+i%70000)
	}
	src[roundChunk+3] = float32(math.Inf(-1))
	src[2*roundChunk] = float32(math.NaN())
	for _, th := range []int{1, 2, 5} {
		for _, d := range []core.Dtype{core.F16, core.BF16} {
			limit := src
			if d == core.F16 {
				limit = make([]float32, len(src))
				for i, x := range src {
					limit[i] = x / 2 // within ±35000
				}
			}
			got, err := roundF32(limit, d, th)
			if err != nil {
				t.Fatalf("%s threads %d: %v", d, th, err)
			}
			for i, x := range limit {
				want := core.F32ToF16(x)
				if d == core.BF16 {
					want = core.F32ToBF16(x)
				}
				if got[i] != want {
					t.Fatalf("%s threads %d: element %d = %#04x, want %#04x", d, th, i, got[i], want)
				}
			}
		}
	}
	over := make([]float32, len(src))
	over[2*roundChunk+5], over[roundChunk+9] = 1e6, 65520 // 65520 rounds up to inf
	over[7] = float32(math.Inf(1))                        // kept, not an overflow
	if _, err := roundF32(over, core.F16, 3); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("element %d is 65520", roundChunk+9)) {
		t.Errorf("overflow: %v", err)
	}
	if _, err := roundF32([]float32{65504, 65519.99, -65519.99, 1, 2, 3, 4, 5, float32(math.NaN())}, core.F16, 1); err != nil {
		t.Errorf("largest halves: %v", err)
	}
	for _, at := range []int{0, 7, 8, 15, 16} { // in the 8-wide part and in the tail
		v := make([]float32, 17)
		v[at] = -65520
		if _, err := roundF32(v, core.F16, 1); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("element %d is -65520", at)) {
			t.Errorf("overflow at %d of 17: %v", at, err)
		}
	}
}
