package preprocess

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// The kernels behind jpegRow, idct and h2v2Row are assembly on amd64 (AVX2,
// where the CPU has it) and arm64 (NEON; CI runs these tests under
// qemu-aarch64-static), the reference loops elsewhere and with -tags purego.

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

// TestJPEGRowSIMD checks jpegRow against the reference loop for every
// length up to 70, each output followed by guard bytes that must stay
// untouched.
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

// TestIDCTSIMD checks idct against the reference on random blocks, sparse
// and dense, of real and of absurd magnitudes (clamping and wrapping),
// written into a plane (rows 8 bytes apart, or further) with guard bytes on
// every side that must stay untouched.
func TestIDCTSIMD(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const guard = 0x5a
	for i := 0; i < 20000; i++ {
		stride := []int{8 + 13, 8, 8 + 3, 8 + 1024}[i%4]
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

// TestH2V2RowSIMD checks h2v2Row against the reference for every row
// length from 3 to 100, with guard bytes after the output that must stay
// untouched.
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

// TestJPEGRowSIMDAllChroma checks jpegRow against the reference on every
// (Cb, Cr) pair, each with luma 0, 255 and random (the clamps at both ends
// and in between): a row of 256 pixels per Cb, Cr counting up, so every
// SIMD lane meets every value.
func TestJPEGRowSIMDAllChroma(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cb, cr := make([]byte, 256), make([]byte, 256)
	for i := range cr {
		cr[i] = byte(i)
	}
	want, got := make([]byte, 3*256), make([]byte, 3*256)
	for c := range 256 {
		for i := range cb {
			cb[i] = byte(c)
		}
		for _, y := range [][]byte{make([]byte, 256), bytes.Repeat([]byte{255}, 256), jpegSIMDInputs(r, 256)} {
			jpegRowGeneric(want, y, cb, cr)
			jpegRow(got, y, cb, cr)
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("Cb %d, Cr %d, Y %d: channel %d is %d, want %d", c, i/3, y[i/3], i%3, got[i], want[i])
					}
				}
			}
		}
	}
}

// benchSIMDRatio times simd and generic alternately, b.N times each, and
// reports the time of one simd call and generic's time over simd's (the
// speed-up; 1 where the build has no assembly). Each call should do enough
// work (tens of microseconds) for the clock reads not to count.
func benchSIMDRatio(b *testing.B, simd, generic func()) {
	var ts, tg time.Duration
	for range b.N {
		t0 := time.Now()
		simd()
		t1 := time.Now()
		generic()
		ts += t1.Sub(t0)
		tg += time.Since(t1)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "simd-ns/op")
	b.ReportMetric(float64(tg)/float64(ts), "generic/simd")
}

// BenchmarkJPEGKernelsVersusGeneric compares each JPEG kernel (AVX2 on
// amd64, NEON on arm64) with its reference loop in the same run, on the
// work of one 12 MP 4:2:0 photo's row or of a strip of blocks: a row of
// 4000 pixels (colour), a chroma row of 2000 samples (upsampling), 500
// dense blocks of photo-like magnitudes (IDCT).
func BenchmarkJPEGKernelsVersusGeneric(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	b.Run("ycc-row-4000", func(b *testing.B) {
		y, cb, cr := jpegSIMDInputs(r, 4000), jpegSIMDInputs(r, 4000), jpegSIMDInputs(r, 4000)
		dst := make([]byte, 3*4000)
		benchSIMDRatio(b, func() { jpegRow(dst, y, cb, cr) }, func() { jpegRowGeneric(dst, y, cb, cr) })
	})
	b.Run("h2v2-row-2000", func(b *testing.B) {
		near, far := jpegSIMDInputs(r, 2000), jpegSIMDInputs(r, 2000)
		out, sum := make([]byte, 4000), make([]int32, 2000)
		benchSIMDRatio(b, func() { h2v2Row(out, near, far, sum) }, func() { h2v2RowGeneric(out, near, far, sum) })
	})
	b.Run("idct-500-blocks", func(b *testing.B) {
		blks := make([][64]int32, 500)
		for i := range blks {
			for k := range blks[i] {
				// Low frequencies large, high ones small and often zero,
				// as in a quality-90 photo.
				if mag := int32(1024 >> (k/8 + k%8)); mag > 0 && r.IntN(4) > 0 {
					blks[i][k] = r.Int32N(2*mag+1) - mag
				}
			}
		}
		const stride = 8 * 500
		plane := make([]byte, 8*stride)
		run := func(f func(in *[64]int32, dst []byte, stride int)) func() {
			return func() {
				for i := range blks {
					f(&blks[i], plane[8*i:], stride)
				}
			}
		}
		benchSIMDRatio(b, run(idct), run(idctGeneric))
	})
}
