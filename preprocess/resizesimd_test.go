package preprocess

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestHpassPlanar checks the SIMD horizontal pass against hpassRows, byte
// for byte, on random, flat and saturating rows, for downscales up to
// 4000 → 13 and upscales, whole passes and windows of them (as a crop
// computes), widths that are and are not multiples of the 16-pixel
// blocks, and a row whose last output's taps reach its end.
func TestHpassPlanar(t *testing.T) {
	if !hpassSIMD {
		t.Skip("no SIMD horizontal pass on this CPU or build (AVX2 on amd64)")
	}
	r := rand.New(rand.NewPCG(7, 8))
	type geo struct{ in, out, c0, c1 int }
	geos := []geo{
		{4000, 299, 37, 261}, {4000, 299, 0, 299}, {3000, 224, 0, 224}, {4000, 13, 0, 13},
		{224, 224, 0, 224}, {100, 224, 0, 224}, {17, 40, 3, 39}, {1, 5, 0, 5}, {2, 1, 0, 1},
		{33, 16, 0, 16}, {640, 224, 100, 101}, {5000, 37, 0, 37}, {49, 48, 0, 48},
	}
	fills := map[string]func(b []byte){
		"random": func(b []byte) {
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
		},
		"edges": func(b []byte) { // 0/255 steps: cubic's negative lobes clamp both ways
			for i := range b {
				if (i/3/(1+i%7))%2 == 0 {
					b[i] = 255
				} else {
					b[i] = 0
				}
			}
		},
		"flat": func(b []byte) {
			for i := range b {
				b[i] = 200
			}
		},
	}
	for _, g := range geos {
		p := newPass(g.in, g.out, g.c0, g.c1)
		h := newHpassPlanar(p, g.in)
		for name, fill := range fills {
			src := make([]byte, 2*3*g.in)
			fill(src)
			row0, row1 := src[:3*g.in], src[3*g.in:]
			n := 3 * (g.c1 - g.c0)
			want0, want1 := make([]byte, n), make([]byte, n)
			hpassRows(want0, want1, row0, row1, p, g.c0, g.c1, make([]uint64, 3*g.in))
			for i, row := range [][]byte{row0, row1} {
				got := make([]byte, n+8)
				h.row(got[:n], row)
				want := [][]byte{want0, want1}[i]
				if !bytes.Equal(got[:n], want) {
					for j := range want {
						if got[j] != want[j] {
							t.Fatalf("%d → %d, outputs %d..%d, %s row %d: byte %d (output %d) = %d, hpassRows %d",
								g.in, g.out, g.c0, g.c1, name, i, j, g.c0+j/3, got[j], want[j])
						}
					}
				}
				if !bytes.Equal(got[n:], make([]byte, 8)) {
					t.Fatalf("%d → %d: wrote past its outputs", g.in, g.out)
				}
			}
		}
	}
}

// TestResizeCropSIMD checks whole resizes with and without the SIMD
// horizontal pass, on a photo-sized image and a crop of it.
func TestResizeCropSIMD(t *testing.T) {
	if !hpassSIMD {
		t.Skip("no SIMD horizontal pass on this CPU or build (AVX2 on amd64)")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, g := range []geometry{
		{w: 1203, h: 901, rw: 299, rh: 224, cw: 224, ch: 224, offX: 37, offY: 0},
		{w: 640, h: 1000, rw: 224, rh: 350, cw: 224, ch: 224, offX: 0, offY: 63},
		{w: 150, h: 100, rw: 336, rh: 224, cw: 224, ch: 224, offX: 56, offY: 0},
	} {
		src := make([]byte, 3*g.w*g.h)
		for i := range src {
			src[i] = byte(r.IntN(256))
		}
		want, got := make([]byte, 3*g.cw*g.ch), make([]byte, 3*g.cw*g.ch)
		hpassScalar = true
		resizeCrop(want, src, g, nil)
		hpassScalar = false
		resizeCrop(got, src, g, nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("%dx%d → %dx%d: SIMD horizontal pass differs from hpassRows", g.w, g.h, g.rw, g.rh)
		}
	}
}
