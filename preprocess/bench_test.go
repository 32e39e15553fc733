package preprocess

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"sync"
	"testing"
)

// photoLike draws a deterministic w x h picture with what makes JPEG decode
// cost what it costs on a photo: smooth gradients, edges and fine texture.
func photoLike(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		fy := float64(y) / float64(h)
		for x := 0; x < w; x++ {
			fx := float64(x) / float64(w)
			n := uint32(x)*0x9E3779B1 ^ uint32(y)*0x85EBCA77
			n ^= n >> 15
			n *= 0x2C1B3C6D
			tex := float64(n>>27) - 16 // fine grain, +-16 levels
			sky := 200 - 120*fy
			hill := 60 + 40*math.Sin(fx*12+3*math.Sin(fy*7))
			v := sky
			if fy > 0.55+0.1*math.Sin(fx*9) {
				v = hill
			}
			i := m.PixOffset(x, y)
			m.Pix[i+0] = clampf(v*0.8 + tex)
			m.Pix[i+1] = clampf(v*0.9 + 30*fx + tex)
			m.Pix[i+2] = clampf(v*1.1 - 20*fy + tex)
			m.Pix[i+3] = 255
		}
	}
	return m
}

func clampf(v float64) uint8 { return uint8(min(max(v, 0), 255)) }

// cpuTimer reports the process CPU time per op next to ns/op: on a busy
// machine wall time includes time spent waiting for a core.
func cpuTimer(b *testing.B) func() {
	t0 := processCPU()
	return func() {
		if d := processCPU() - t0; d > 0 {
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

var jpeg12 = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, photoLike(4000, 3000), &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// BenchmarkJPEG12MP is the whole path for a 12-megapixel photo: decode,
// colour conversion, resize, crop, normalise.
// "rows" is the default, the decoder handing rows to the resize as it
// converts them; "whole" decodes the whole RGB image first. "turned" is
// the photo with EXIF orientation 6, a portrait taken on a phone.
func BenchmarkJPEG12MP(b *testing.B) {
	p := New(DefaultConfig(), Options{})
	for _, tc := range []struct {
		name  string
		whole bool
		o     uint16
	}{{"rows", false, 1}, {"whole", true, 1}, {"rows-turned", false, 6}, {"whole-turned", true, 6}} {
		name, whole, data := tc.name, tc.whole, jpeg12()
		if tc.o != 1 {
			data = withOrientation(data, tc.o)
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { jpegWhole = old }(jpegWhole)
			jpegWhole = whole
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			defer cpuTimer(b)()
			for range b.N {
				if _, err := p.Bytes(data, "bench.jpg"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJPEG12MPParallel runs one worker per core, as indexing does.
func BenchmarkJPEG12MPParallel(b *testing.B) {
	data := jpeg12()
	p := New(DefaultConfig(), Options{})
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Bytes(data, "bench.jpg"); err != nil {
				b.Error(err)
			}
		}
	})
}

// BenchmarkJPEGDecode12MP is the standard library's decode alone, the yard
// stick for the rest.
func BenchmarkJPEGDecode12MP(b *testing.B) {
	data := jpeg12()
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToRGB12MP is the YCbCr 4:2:0 to packed RGB conversion.
func BenchmarkToRGB12MP(b *testing.B) {
	img, err := jpeg.Decode(bytes.NewReader(jpeg12()))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		buf, _, _ = toRGB(buf, img, yccJFIF)
	}
}

// BenchmarkResize12MP is the resize and crop alone: 4000x3000 packed RGB to
// the 224x224 window of its 298x224 resize, with the horizontal pass as it
// runs here (simd where the CPU has it) and in hpassRows (scalar).
func BenchmarkResize12MP(b *testing.B) {
	const w, h = 4000, 3000
	src := synthetic(w, h, "noise")
	p := New(DefaultConfig(), Options{})
	g, err := p.geometry(w, h)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, g.cw*g.ch*3)
	for _, side := range []string{"simd", "scalar"} {
		b.Run(side, func(b *testing.B) {
			if side == "simd" && !hpassSIMD {
				b.Skip("no SIMD horizontal pass on this CPU or build")
			}
			hpassScalar = side == "scalar"
			defer func() { hpassScalar = false }()
			var scratch []byte
			b.ResetTimer()
			defer cpuTimer(b)()
			for range b.N {
				scratch = resizeCrop(dst, src, g, scratch)
			}
		})
	}
}

// BenchmarkOrient12MP is the cost of a rotated phone photo (orientation
// 6), of a mirrored one (2) and of one upside down (3).
func BenchmarkOrient12MP(b *testing.B) {
	const w, h = 4000, 3000
	src := synthetic(w, h, "noise")
	dst := make([]byte, len(src))
	for _, o := range []int{6, 2, 3} {
		b.Run(fmt.Sprint(o), func(b *testing.B) {
			defer cpuTimer(b)()
			for range b.N {
				orient(dst, src, w, h, o)
			}
		})
	}
}
