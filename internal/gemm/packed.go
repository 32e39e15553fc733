package gemm

import (
	"runtime"
	"unsafe"

	"github.com/clipidx/clipidx/internal/mmap"
)

// packedF32 is a weight Matrix packed once (Pool.Pack) in the B panels of
// one micro-kernel, widened to float32: products on that kernel read their
// panels straight from it instead of transposing the weights into the
// worker's buffer for every block of every product.
//
// Depths are cut in blocks of step (depthStep, as gemmRegion cuts them);
// the block starting at depth pc (of kb = min(step, Cols-pc) depths) starts
// at data[pc·np], and holds the np/nr panels one after the other, each
// [kb, nr] as packB writes them, zero beyond Rows. So any run of panels of
// one block (a worker's column strip) is contiguous, as in w.bpack.
type packedF32 struct {
	kr   *microKernel
	step int // depths per block
	np   int // Rows rounded up to kr.nr
	data []float32
}

// depthStep is the depth of the blocks kernel kr cuts k into: near-equal
// multiples of 16 (the packers' groups), at most kr.kc, not kc, kc, ...,
// remainder (k = 257 would otherwise end with a pass over C for a depth
// of 1).
func depthStep(kr *microKernel, k int) int {
	nb := (k + kr.kc - 1) / kr.kc
	return min(kr.kc, ((k+nb-1)/nb+15)/16*16)
}

// Pack packs w once for the current micro-kernel, on the pool's workers,
// and reports whether it did. Later products with w read the packed panels
// in place, which spares each of them the transposing copy of the weights
// (what that gains: PackPays), and the caller may then drop w.F32 or w.U16
// (w keeps its Rows, Cols and Dtype; LinearRef and PackBF16 still need
// them). The packed copy is float32, whatever w's
// Dtype, padded to whole panels, and held outside the Go heap until w's
// packed copy is collected (offHeap).
//
// Pack does nothing and returns false on a pool using the system BLAS
// (UseSystemBLAS), or for an empty matrix. If the kernel is changed after
// Pack (SetKernel), products still give the same results, but copy the
// weights out of the packed panels block by block, slower than before.
func (p *Pool) Pack(w *Matrix) bool {
	if p.workers[0].sys != nil || w.Rows <= 0 || w.Cols <= 0 {
		return false
	}
	kr := currentKernel().kr
	if w.packed != nil && w.packed.kr == kr {
		return true
	}
	g := linearArgs(nil, nil, 0, w, nil) // checks w's elements
	g.kr = kr
	n, k, nr := w.Rows, w.Cols, kr.nr
	pk := &packedF32{kr: kr, step: depthStep(kr, k), np: (n + nr - 1) / nr * nr}
	pk.data = offHeap[float32](pk, pk.np*k)
	p.Parallel(pk.np/nr, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			j0 := q * nr
			nn := min(nr, n-j0)
			for pc := 0; pc < k; pc += pk.step {
				kb := min(pk.step, k-pc)
				dst := pk.data[pc*pk.np+q*kb*nr : pc*pk.np+(q+1)*kb*nr]
				switch {
				case g.kind == bPacked: // packed for another kernel
					packFromPacked(dst, nr, g.pk, j0, nn, pc, kb)
				case nn == nr:
					packPanelT(kr, dst, &g, j0, pc, kb)
				default:
					packTGo(dst, nr, &g, j0, nn, pc, 0, kb)
				}
			}
		}
	})
	w.packed = pk
	return true
}

// PackPays reports whether products on the current kernel were measured
// faster with weights packed by Pool.Pack, so that a caller using a matrix
// many times gains by packing it. True for the AVX-512 kernel, which reads
// the packed panels in place, one sequential stream from each block: on
// ViT-H/14 (Emerald Rapids, 2 threads) image and text passes took
// 0.93-0.94x of their time, and 0.95-0.97x more with the packed weights on
// huge pages (medians of interleaved pairs). True for the AVX2 kernel too:
// on Emerald Rapids it gained nothing (image 1.04x, text 1.00x, within the
// noise), but that CPU runs AVX-512; on an AVX2-only AMD Zen 3 (2 threads,
// 2026-12-07) image passes took 0.93-0.98x of their time and text passes
// 0.96-0.99x, which took both from level with ONNX Runtime to 0.95x of its
// time. The Go and NEON kernels were not measured, so for them it is
// false; Pack still works on them.
func PackPays() bool { return currentKernel().kr.packPays }

// offHeap returns n zeroed elements for owner's packed weights outside the
// Go heap (mmap.Anon), unmapped when owner is collected, or on the heap if
// that fails. Outside the heap, gigabytes of weights do not raise the
// collector's target (with GOGC=100 garbage could pile up to their size
// before a collection), and they get the huge pages they ask for before
// their first write: every pass streams them from memory, and the
// kernels' loads then cross 512 times fewer page boundaries.
func offHeap[E float32 | uint16, T any](owner *T, n int) []E {
	size := int(unsafe.Sizeof(E(0)))
	b, free, err := mmap.Anon(size * n)
	if err != nil || n == 0 {
		return make([]E, n)
	}
	runtime.AddCleanup(owner, func(free func() error) { _ = free() }, free)
	return unsafe.Slice((*E)(unsafe.Pointer(&b[0])), n)
}

// Packed reports whether w has been packed by Pool.Pack.
func (w *Matrix) Packed() bool { return w.packed != nil }

// at returns element [j, p] of the packed matrix (row j of the weights,
// depth p), for products on another kernel than the one packed for.
func (pk *packedF32) at(j, p int) float32 {
	nr := pk.kr.nr
	pc := p / pk.step * pk.step
	kb := min(pk.step, len(pk.data)/pk.np-pc)
	return pk.data[pc*pk.np+j/nr*kb*nr+(p-pc)*nr+j%nr]
}

// inPlace reports whether g's B is packed for kernel kr (every part of a
// stacked product is), so that the kernel reads its panels in place.
func (g *gemmArgs) inPlace(kr *microKernel) bool {
	if g.kind != bPacked {
		return false
	}
	if g.partRows == 0 {
		return g.pk.kr == kr
	}
	for _, pk := range g.pks {
		if pk != nil && pk.kr != kr {
			return false
		}
	}
	return true
}

// panel returns the first element of the packed panel holding columns
// [j0, j0+nr) of the depth block starting at pc (kb deep); g.inPlace.
func (g *gemmArgs) panel(j0, pc, kb int) *float32 {
	pk := g.pk
	if g.partRows > 0 {
		i := j0 / g.partRows
		pk, j0 = g.pks[i], j0-i*g.partRows
	}
	return &pk.data[pc*pk.np+j0*kb]
}

// packFromPacked is packTGo for a B packed for another kernel: rows p in
// [0, kb) of a panel of nr columns, dst[p·nr+j] = B[j0+j, pc+p] for j < nn,
// zero beyond.
func packFromPacked(dst []float32, nr int, pk *packedF32, j0, nn, pc, kb int) {
	for p := 0; p < kb; p++ {
		d := dst[p*nr : p*nr+nr]
		for j := 0; j < nn; j++ {
			d[j] = pk.at(j0+j, pc+p)
		}
		clear(d[nn:])
	}
}
