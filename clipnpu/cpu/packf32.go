package cpu

import (
	"runtime"

	"github.com/clipidx/clipidx/internal/gemm"
)

// packF32After is the use of a float32 weight matrix at which the products
// pack it once in the panels of the float32 kernel (gemm.Pool.Pack), after
// which no product transposes it again: with the AVX-512 kernel about a
// tenth of a ViT-H/14 image or text pass on Emerald Rapids (gemm.PackPays). Not at load, nor at the first use: packing costs
// about what one use saves, plus fresh memory, so a process that uses the
// weights once (a text search: one pass of one prompt) would only pay for
// it; from the second use on it has paid back. 0 turns packing off (tests).
// Only on kernels where packing was measured faster (gemm.PackPays).
var (
	packF32After = 2
	packPays     = gemm.PackPays
)

// warmF32 counts a use of each float32 matrix of ws and packs the ones
// reaching packF32After. The packed copy takes the place of the stored
// one, whose pages leave the process (a mapping) or become garbage (a
// decoded copy, or weights made in memory), so the model still holds 4
// bytes a weight. Weights viewed in a file read into memory (where the
// system cannot map it) are not packed: that memory cannot be let go in
// part, so packing would hold them twice. 16-bit weights (a 16-bit
// checkpoint, --weights f16) are not packed either: as float32 they would
// double their memory; bf16 precision has its own packing.
func (f *fastCPU) warmF32(ws ...*lin) {
	for _, w := range ws {
		if w.bf != nil || w.m.Dtype != gemm.F32 || w.m.Packed() || packF32After <= 0 || !packPays() {
			continue
		}
		if w.uses++; w.uses < packF32After {
			continue
		}
		src := matrixBytes(&w.m)
		mapped := f.m.Mapping.Holds(src)
		if mapped && !f.m.Mapping.Releasable() {
			continue
		}
		if !f.pool.Pack(&w.m) {
			continue
		}
		w.m.F32, w.src.F32 = nil, nil
		f.packedN.Add(1)
		f.packedBytes.Add(int64(len(src)))
		if mapped {
			f.m.Mapping.Release(src)
			continue
		}
		// Weights held on the heap are garbage now; collect them as we go,
		// or the heap would grow to both copies before the next GC.
		if f.unpacked += len(src); f.unpacked >= bf16CollectEvery {
			runtime.GC()
			f.unpacked = 0
		}
	}
}
