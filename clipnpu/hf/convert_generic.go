//go:build !amd64 || purego

package hf

// roundF16Fast has no hardware path in this build: roundRange's loop does
// all the elements.
func roundF16Fast(dst []uint16, src []float32) (int, bool) { return 0, false }

// hasF16C is false in this build (tests toggle it on amd64).
var hasF16C = false
