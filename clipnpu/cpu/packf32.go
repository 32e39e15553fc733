package cpu

import (
	"runtime"
	"time"

	"github.com/clipidx/clipidx/internal/gemm"
)

// When to pack. gemm.Pool.Pack packs a float32 weight matrix once in the
// panels of the float32 kernel, after which no product transposes it
// again. Where the kernel gains by it (gemm.PackPays: AVX-512 and AVX2), a ViT-H/14
// image pass of 4 then takes about 0.94x the time and a one-prompt text
// query 0.8x (Emerald Rapids, 2 threads). But packing costs once: fresh
// memory for every weight (2.5 GB for the image tower) and a pass over the
// weights, measured at 0.7-0.8 ns a byte of weights there (1.9 s for the
// image tower, 1.0 s for the text tower). A process that runs a tower a few
// times (a build of a dozen photos, a search, a few queries to `serve`)
// would only pay for it.
//
// So each tower packs like a skier who rents until the rent paid would
// have bought the skis: once the time its passes have taken, times the
// fraction packing would have saved of it (packSaving, the image pass's,
// the lowest measured), reaches what packing its float32 weights costs
// (packCostPerByte), its matrices are packed at their next use. For
// ViT-H/14's image tower that is after about 34 s of passes (5 passes of
// 4 images); for its text tower after about 18 s (150 one-prompt queries,
// 9 passes of 8 prompts). A process running image passes then pays at most
// about twice what the best choice made with hindsight would have cost it;
// one running one-prompt queries, whose saving the rule underestimates
// (0.2 against packSaving), at most about four times. Options.PackEarly
// packs at the second pass instead (the first one faults the mapping in),
// for a caller that knows it has much to do (bench's steady state).
const (
	packSaving      = 0.06
	packCostPerByte = 0.8e-9 // seconds
)

// packPays, packOff and packClock are hooks for the tests: whether the
// kernel gains by packing (gemm.PackPays), packing turned off, and the
// clock that times the passes.
var (
	packPays  = gemm.PackPays
	packOff   = false
	packClock = time.Now
)

// pass runs one pass of tower t and keeps the packing policy's account:
// whether t's float32 weights are due to be packed during it.
func (f *fastCPU) pass(t *fastTower, run func()) {
	f.cur = t
	if !t.packDue && !packOff && f.precision == "f32" && packPays() {
		switch {
		case f.cachesF32(t):
			// Packed once for this and every later start (packcache.go).
			t.packDue = true
		case f.packEarly:
			t.packDue = t.passes >= 1
		default:
			t.packDue = packSaving*t.spent.Seconds() >= packCostPerByte*float64(f.packableBytes(t))
		}
	}
	t0 := packClock()
	run()
	if !t.packDue {
		t.spent += packClock().Sub(t0)
	}
	if t.packDue && !t.saved && f.cachesF32(t) {
		t.saved = f.saveF32(t)
	}
	t.passes++
}

// packableBytes is the size of tower t's float32 matrices as stored.
func (f *fastCPU) packableBytes(t *fastTower) int64 {
	var n int64
	for _, w := range f.towerLins(t) {
		if w.bf == nil && w.m.Dtype == gemm.F32 {
			n += int64(w.m.Rows) * int64(w.m.Cols) * 4
		}
	}
	return n
}

// warmF32 packs each float32 matrix of ws when packing the current
// tower's weights is due (pass) and it is not packed yet. The packed copy
// takes the place of the stored one, whose pages leave the process (a mapping) or become garbage (a
// decoded copy, or weights made in memory), so the model still holds 4
// bytes a weight. Weights viewed in a file read into memory (where the
// system cannot map it) are not packed: that memory cannot be let go in
// part, so packing would hold them twice. 16-bit weights (a 16-bit
// checkpoint, --weights f16) are not packed either: as float32 they would
// double their memory; bf16 precision has its own packing.
func (f *fastCPU) warmF32(ws ...*lin) {
	for _, w := range ws {
		if f.cur == nil || !f.cur.packDue || w.bf != nil || w.m.Dtype != gemm.F32 || w.m.Packed() {
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
		packCount.Add(1)
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
