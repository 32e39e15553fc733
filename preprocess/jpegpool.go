package preprocess

import (
	"image"
	"sync"
)

// A 12 MP photo needs about 18 MB of component planes and 36 MB of RGB
// output; allocating them fresh for every photo makes the garbage collector
// and the page-fault handler a large part of a build's decode time. The
// planes and coefficient buffers live in an arena that goes back to a pool
// when decode ends; the RGB output goes back when its reader is done with
// it (releaseDecoded).

// jpegArena holds one decode's reusable buffers, indexed by component.
type jpegArena struct {
	planes [4][]byte
	coefs  [4][]int16
	outs   [4][]byte  // upsampler output rows
	sums   [4][]int32 // upsampler vertical sums
}

var (
	jpegArenas sync.Pool // *jpegArena
	jpegRGBs   sync.Pool // *[]byte, packed RGB output
)

func getJPEGArena() *jpegArena {
	if a, ok := jpegArenas.Get().(*jpegArena); ok {
		return a
	}
	return new(jpegArena)
}

// grow returns buf with length n, zeroed, reusing its memory when it is
// large enough: a decode relies on fresh planes and coefficients reading
// as zero, and no pixel of an earlier photo may show through.
func grow[T byte | int16 | int32](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// plane returns component i's zeroed plane of n samples.
func (a *jpegArena) plane(i, n int) []byte {
	a.planes[i] = grow(a.planes[i], n)
	return a.planes[i]
}

// coef returns component i's zeroed coefficient buffer of n values.
func (a *jpegArena) coef(i, n int) []int16 {
	a.coefs[i] = grow(a.coefs[i], n)
	return a.coefs[i]
}

// rgbOutput returns a buffer of n bytes for packed RGB; its contents are
// overwritten whole by convert.
func rgbOutput(n int) []byte {
	if p, ok := jpegRGBs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n)
}

// releaseDecoded hands the pixels of an image decoded by this package's
// JPEG decoder back for reuse; img must not be used afterwards. Other
// images are left alone.
func releaseDecoded(img image.Image) {
	if m, ok := img.(*packedRGB); ok && m.Pix != nil {
		p := m.Pix
		m.Pix = nil
		jpegRGBs.Put(&p)
	}
}
