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

// TestIDCTSIMD checks idct (AVX2 where the CPU has it) against the
// reference on random blocks, sparse and dense, of real and of absurd
// magnitudes (clamping and wrapping), written into a plane with guard
// bytes on every side that must stay untouched.
func TestIDCTSIMD(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const stride, guard = 8 + 13, 0x5a
	for i := 0; i < 20000; i++ {
		var blk [64]int32
		mag := []int32{16, 256, 2048 * 16, 1 << 20, 1 << 30}[i%5]
		density := r.IntN(64) + 1
		for k := range blk {
			if r.IntN(64) < density {
				blk[k] = int32(r.Int64N(2*int64(mag)+1) - int64(mag))
			}
		}
		want := bytes.Repeat([]byte{guard}, stride*10)
		got := bytes.Repeat([]byte{guard}, stride*10)
		in := blk
		idctGeneric(&in, want[stride+3:], stride)
		in = blk
		idct(&in, got[stride+3:], stride)
		if in != blk {
			t.Fatalf("block %d: idct changed its input", i)
		}
		if !bytes.Equal(got, want) {
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("block %d (magnitude %d): byte %d (row %d col %d) is %d, want %d",
						i, mag, j, j/stride-1, j%stride-3, got[j], want[j])
				}
			}
		}
	}
}

// TestH2V2RowSIMD checks h2v2Row (AVX2 where the CPU has it) against the
// reference for every row length from 3 to 100, with guard bytes after
// the output that must stay untouched.
func TestH2V2RowSIMD(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const guard = 40
	for n := 3; n <= 100; n++ {
		for rep := 0; rep < 20; rep++ {
			near, far := jpegSIMDInputs(r, n), jpegSIMDInputs(r, n)
			sum := make([]int32, n)
			want := bytes.Repeat([]byte{0xa5}, 2*n+guard)
			got := bytes.Repeat([]byte{0xa5}, 2*n+guard)
			h2v2RowGeneric(want, near, far, sum)
			h2v2Row(got, near, far, sum)
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("n=%d: byte %d is %d, want %d (guard from %d)", n, i, got[i], want[i], 2*n)
					}
				}
			}
		}
	}
}
