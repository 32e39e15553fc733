//go:build !amd64 || purego

package search

// useAVX2 is false where there is no assembly kernel.
const useAVX2 = false

// dotHi is Σ q[i]·hi[i] over len(q) bfloat16 values in hi.
func dotHi(hi []byte, q []float32) float32 { return dotHiGeneric(hi, q) }
