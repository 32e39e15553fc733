package hf

import (
	"fmt"
	"math"
	"runtime"
	"sync" // Rounding float32 checkpoints to 16 bits at load (Options.Weights).

	//
	// ViT-H/14 as published (laion's model.safetensors) is float32: 3.9 GB that,
	// memory-mapped, all become resident once both towers have run. Rounded to
	// binary16 the matrices take half that, and the fast CPU path widens them
	// back to float32 while packing, so products still accumulate in float32:
	// the only change is the rounding of each weight (relative error at most
	// 2^-11). On the fixture that moves the embeddings by 1-cosine ≤ 2.5e-6, inside
	// the float32 bar of 0.99999 (convert_ext_test.go holds it there). bfloat16
	// is not offered: its 2^-8 rounding measured 1-cosine up to 1.6e-4 there.

	"github.com/clipidx/clipidx/clipnpu/core"
)

// KeepStored is the conv value of Options.Weights "" or "stored": float32
// matrices stay float32 views of the mapping. (dtF32 is never a conversion
// target, so it doubles as "none".)
const KeepStored = core.F32

// WeightsChoices lists the values Options.Weights accepts, for help texts.
const WeightsChoices = "stored or f16"

// ParseWeights maps Options.Weights to the rounding target.
func ParseWeights(s string) (core.Dtype, error) {
	switch s {
	case "", "stored":
		return KeepStored, nil
	case "f16":
		return core.F16, nil
	case "bf16":
		return 0, fmt.Errorf("clipnpu: weights bf16: not offered, its rounding moves embeddings beyond cosine 0.99999; want %s", WeightsChoices)
	}
	return 0, fmt.Errorf("clipnpu: weights %q: want %s", s, WeightsChoices)
}

// roundChunk is how many elements one goroutine rounds at a time.
const roundChunk = 1 << 16

// roundF32 rounds src to d (dtF16; dtBF16 for tests), to nearest with ties to even,
// on up to threads goroutines (0 = GOMAXPROCS). A finite value that
// overflows binary16 (|x| ≥ 65520, which rounds past the largest half,
// 65504) is an error: it would become infinite. NaN and infinities are
// kept as they are.
func roundF32(src []float32, d core.Dtype, threads int) ([]uint16, error) {
	dst := make([]uint16, len(src))
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	chunks := (len(src) + roundChunk - 1) / roundChunk
	threads = max(1, min(threads, chunks))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		bad  = -1
		next = make(chan int, chunks)
	)
	for c := range chunks {
		next <- c
	}
	close(next)
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				lo, hi := c*roundChunk, min(len(src), (c+1)*roundChunk)
				if i := roundRange(dst[lo:hi], src[lo:hi], d); i >= 0 {
					mu.Lock()
					if bad < 0 || lo+i < bad {
						bad = lo + i
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if bad >= 0 {
		return nil, fmt.Errorf("element %d is %g, which rounds to infinity in f16 (|x| ≥ 65520): use the stored weights (--weights stored)", bad, src[bad])
	}
	return dst, nil
}

// roundRange rounds src into dst and returns the index of the first finite
// value that overflowed, or -1.
func roundRange(dst []uint16, src []float32, d core.Dtype) int {
	dst = dst[:len(src)]
	if d == core.BF16 {
		for i, x := range src {
			dst[i] = core.F32ToBF16(x)
		}
		return -1
	}
	done, over := roundF16Fast(dst, src) // F16C, same rounding as f32ToF16
	for i := done; i < len(src); i++ {
		dst[i] = core.F32ToF16(src[i])
		over = over || dst[i]&0x7fff == 0x7c00
	}
	if !over {
		return -1
	}
	for i, h := range dst {
		if h&0x7fff == 0x7c00 && !math.IsInf(float64(src[i]), 0) {
			return i
		}
	}
	return -1
}
