package preprocess

import (
	"image"
	"runtime"
	"sync"
	"sync/atomic"
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
	jpegArenas sharedPool[*jpegArena]
	jpegRGBs   sharedPool[[]byte] // packed RGB output
)

func getJPEGArena() *jpegArena {
	if a, ok := jpegArenas.get(); ok {
		return a
	}
	return new(jpegArena)
}

// sharedPool keeps released buffers where any goroutine can take them
// back, and lets go of them once a whole garbage collection cycle passed
// without a get or a put (as sync.Pool lets go of its items after two
// collections). sync.Pool would do, but for its per-processor private
// slots, which no other processor can take from: a decode running on
// another processor than the one that released a 36 MB RGB buffer made a
// fresh one and faulted its pages in, and page faults cost about 13 µs
// each on a VM (docs/performance-log.md, 2026-12-03). It holds at most
// GOMAXPROCS+2 buffers: as many as decodes can run at once, and then some.
type sharedPool[T any] struct {
	mu    sync.Mutex
	items []T
	used  bool // a get or put since the last collection
}

func (p *sharedPool[T]) get() (x T, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used = true
	if n := len(p.items); n > 0 {
		x = p.items[n-1]
		var zero T
		p.items[n-1] = zero // the pool no longer holds it
		p.items = p.items[:n-1]
		return x, true
	}
	return x, false
}

func (p *sharedPool[T]) put(x T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used = true
	if len(p.items) < runtime.GOMAXPROCS(0)+2 {
		p.items = append(p.items, x)
	}
}

// collected drops the items if the pool was not used since the last call,
// which every garbage collection makes (afterGC).
func (p *sharedPool[T]) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used {
		clear(p.items)
		p.items = p.items[:0]
	}
	p.used = false
}

// reset empties the pool (tests).
func (p *sharedPool[T]) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.items)
	p.items, p.used = nil, false
}

func init() { afterGC() }

// afterGC calls the pools' collected once a garbage collection has freed a
// sentinel, and arms itself again with a new one: once per collection.
func afterGC() {
	runtime.AddCleanup(new([16]byte), func(struct{}) {
		jpegArenas.collected()
		jpegRGBs.collected()
		gcSeen.Add(1)
		afterGC()
	}, struct{}{})
}

// gcSeen counts the collections afterGC has seen (tests wait on it).
var gcSeen atomic.Int64

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
	if p, ok := jpegRGBs.get(); ok && cap(p) >= n {
		return p[:n]
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
		jpegRGBs.put(p)
	}
}
