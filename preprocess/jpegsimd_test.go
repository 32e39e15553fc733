package preprocess

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// jpegSIMDInputs returns n bytes for a SIMD test: random, with the extremes
// 0 and 255 (where clamping decides) at the ends.
func jpegSIMDInputs(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		switch r.IntN(8) {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 255
		default:
			b[i] = byte(r.Uint32())
		}
	}
	return b
}

// TestJPEGRowSIMD checks jpegRow (AVX2 where the CPU has it) against the
// reference loop for every length up to 70, each output followed by guard
// bytes that must stay untouched.
func TestJPEGRowSIMD(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const guard = 32
	for n := 0; n <= 70; n++ {
		for rep := 0; rep < 20; rep++ {
			y, cb, cr := jpegSIMDInputs(r, n), jpegSIMDInputs(r, n), jpegSIMDInputs(r, n)
			want := bytes.Repeat([]byte{0xa5}, 3*n+guard)
			got := bytes.Repeat([]byte{0xa5}, 3*n+guard)
			jpegRowGeneric(want[:3*n], y, cb, cr)
			jpegRow(got[:3*n], y, cb, cr)
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("n=%d: byte %d is %d, want %d (guard from %d)", n, i, got[i], want[i], 3*n)
					}
				}
			}
		}
	}
}
