//go:build !amd64 || purego

package search

// useAVX2 is false where there is no assembly kernel.
const useAVX2 = false

// kernel is the only one there is here: the Go loop.
var kernel = defaultKernel()

func defaultKernel() kernelKind { return kernelGo }

// kernels lists the kernels this CPU can run (for the tests).
func kernels() []kernelKind { return []kernelKind{kernelGo} }

// dotHi is Σ q[i]·hi[i] over len(q) bfloat16 values in hi.
func dotHi(hi []byte, q []float32) float32 { return dotHiGeneric(hi, q) }

// scoreRows sets out[r] to the score of row r of hi: len(out) vectors of
// len(h.q) bfloat16 values back to back.
func (h *hiQuery) scoreRows(hi []byte, out []float32) {
	n := len(h.q)
	hi = hi[:len(out)*2*n]
	for r := range out {
		out[r] = dotHiGeneric(hi[r*2*n:(r+1)*2*n], h.q)
	}
}
