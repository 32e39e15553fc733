package export

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// halvesOf splits values as the store keeps them.
func halvesOf(v []float32) (hi, lo []byte) {
	hi, lo = make([]byte, 2*len(v)), make([]byte, 2*len(v))
	for i, x := range v {
		h, l := store.Split(x)
		binary.LittleEndian.PutUint16(hi[2*i:], h)
		binary.LittleEndian.PutUint16(lo[2*i:], l)
	}
	return hi, lo
}

// TestJoinF16 checks joinF16 (assembly where the CPU has it) against the
// Go reference for every length up to 70, odd tails included, with guard
// bytes after the output, on values of every float16 range: normal,
// subnormal, ties, overflow, signed zero.
func TestJoinF16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, -1e9, 6.1035156e-05, 5.9604645e-08,
		2.9802322e-08, 1 + 1.0/2048, 1 + 3.0/2048, -(1 + 1.0/2048), 3.0517578e-05, 1e-20}
	for n := 0; n <= 70; n++ {
		v := make([]float32, n)
		for i := range v {
			switch r.IntN(4) {
			case 0:
				v[i] = special[r.IntN(len(special))]
			case 1:
				v[i] = math.Float32frombits(r.Uint32()&^(0xff<<23) | uint32(100+r.IntN(60))<<23) // around the float16 range
			default:
				v[i] = float32(r.NormFloat64() / 32) // a unit vector's components
			}
		}
		hi, lo := halvesOf(v)
		want := make([]byte, 2*n)
		if n > 0 {
			joinF16Go(want, hi, lo, n)
		}
		got := bytes.Repeat([]byte{0xAA}, 2*n+8)
		joinF16(got, hi, lo, n)
		if !bytes.Equal(got[:2*n], want) {
			t.Fatalf("n=%d: joinF16 differs from the reference\n got %x\nwant %x", n, got[:2*n], want)
		}
		if !bytes.Equal(got[2*n:], bytes.Repeat([]byte{0xAA}, 8)) {
			t.Fatalf("n=%d: wrote past the end", n)
		}
		for i, x := range v {
			if f := binary.LittleEndian.Uint16(want[2*i:]); f != f16(x) {
				t.Fatalf("n=%d [%d]: reference %#04x, f16(%g) = %#04x", n, i, f, x, f16(x))
			}
		}
	}
}

// BenchmarkJoinF16 converts one row of 1024 stored halves to float16.
func BenchmarkJoinF16(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	v := make([]float32, 1024)
	for i := range v {
		v[i] = float32(r.NormFloat64() / 32)
	}
	hi, lo := halvesOf(v)
	dst := make([]byte, 2048)
	b.SetBytes(2048)
	for b.Loop() {
		joinF16(dst, hi, lo, 1024)
	}
}
