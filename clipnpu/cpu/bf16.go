package cpu

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/clipidx/clipidx/internal/gemm"
)

// packBF16 packs every weight matrix once as bf16 for the bf16 kernels
// (gemm.PackBF16: nearest even; f16 and bf16 weights convert exactly), and
// releases each source matrix's pages as it goes, so the model holds 2 bytes
// a weight whatever the checkpoint stores. A tower whose packed weights
// are in the cache (packcache.go) maps them instead, and one packed here
// is saved there. LayerNorm, softmax, GELU, the residual stream and the
// attention products stay float32.
func (f *fastCPU) packBF16() error {
	kernel, err := gemm.BF16Kernel()
	if err != nil {
		return fmt.Errorf("clipnpu: precision bf16: %w (use --precision f32)", err)
	}
	// Hashing at load faulted in samples all over the file: drop them
	// first (only the small vectors are read from the mapping from now on).
	if f.m.Mapping != nil {
		f.m.Mapping.Release(f.m.Mapping.Data)
	}
	for _, t := range f.towers() {
		t.mlpDense = true
		ws := f.towerLins(t)
		if !f.mapBF16(t, ws) {
			if err := f.packBF16All(f.towerGroups(t)); err != nil {
				return err
			}
			f.saveBF16(t, ws)
		}
		stackQKV(t)
	}
	f.precision, f.bf16 = "bf16", kernel
	return nil
}

// packBF16All packs the matrices of groups as bf16 in memory, each
// group's side by side (gemm.PackBF16Group).
func (f *fastCPU) packBF16All(groups [][]*lin) error {
	freed := 0 // bytes of weights rounded at load (heap) let go since the last GC
	for _, g := range groups {
		ms := make([]*gemm.Matrix, len(g))
		for i, w := range g {
			ms[i] = &w.m
		}
		ps, err := gemm.PackBF16Group(ms...)
		if err != nil {
			return fmt.Errorf("clipnpu: precision bf16: %w", err)
		}
		for i, w := range g {
			packCount.Add(1)
			// The source is not needed any more: its pages leave the
			// process (a mapping) or it becomes garbage (weights rounded at
			// load), so the model never holds more than the packed weights
			// and one group being packed.
			if f.m.Mapping == nil {
				freed += len(matrixBytes(&w.m))
			}
			f.m.Mapping.Release(matrixBytes(&w.m))
			w.src.F32, w.src.U16 = nil, nil
			w.bf, w.m = ps[i], gemm.Matrix{Rows: w.m.Rows, Cols: w.m.Cols}
		}
		// Weights held on the heap are garbage now; collect them as we
		// go, or the heap would grow to both copies before the next GC.
		if freed >= bf16CollectEvery {
			runtime.GC()
			freed = 0
		}
	}
	return nil
}

// stackQKV views each layer's bf16 query, key and value weights as one
// matrix [3H, H] where they lie end to end in memory (packed as a group,
// or mapped from a cache file whose matrices fill whole pages: ViT-H/14's
// do), so that layer runs the three projections as one product: one
// rounding of the LayerNorm's output instead of three, one wait for the
// workers, wider products. ViT-H/14's image pass of 4 took 2.062 s against
// 2.088 s (1.2% less; 7 passes each, alternating in one process, AMD Zen 5,
// 2 threads, 2026-12-03). Elsewhere the layer runs three products, with
// the same results bit for bit.
func stackQKV(t *fastTower) {
	for i := range t.layers {
		l := &t.layers[i]
		l.qkvBF = gemm.StackBF16(l.q.bf, l.k.bf, l.v.bf)
	}
}

// bf16CollectEvery bounds the heap weights (rounded at load) left for the
// collector while packing: 128 MiB.
const bf16CollectEvery = 128 << 20

// matrixBytes is the memory behind a matrix's elements, for releasing its
// pages from a mapping.
func matrixBytes(m *gemm.Matrix) []byte {
	switch {
	case len(m.F32) > 0:
		return unsafe.Slice((*byte)(unsafe.Pointer(&m.F32[0])), 4*len(m.F32))
	case len(m.U16) > 0:
		return unsafe.Slice((*byte)(unsafe.Pointer(&m.U16[0])), 2*len(m.U16))
	}
	return nil
}
