package preprocess

import (
	"strconv"

	"github.com/clipidx/clipidx/internal/mmap"
	"github.com/tetratelabs/wazero/experimental"
)

// wasmMemory backs a decoder instance's linear memory with an
// mmap.Reservation of the memory's maximum: growing it neither copies nor
// clears what is there, and none of it is on the Go heap. wazero's own
// memory is a heap slice grown by append; a 12 MP HEIC grows it a step at a
// time to a few hundred MB, so every step copied and cleared all of it, and
// the new slices drove collections whose stack scan had to wait, spinning,
// for the decoder's goroutine, which cannot be preempted inside compiled
// WebAssembly: 3.8 s of CPU for a 12 MP HEIC against 2.6 s with this memory
// (BenchmarkHEICMemory, AMD EPYC Zen 5).
type wasmMemory struct{ r *mmap.Reservation }

// Reallocate returns the first size bytes, or nil when they cannot be had
// (the module's memory.grow then fails, as on an allocator out of memory).
func (m wasmMemory) Reallocate(size uint64) []byte {
	if size > uint64(^uint(0)>>1) {
		return nil
	}
	b, err := m.r.Grow(int(size))
	if err != nil {
		return nil
	}
	return b
}

// Free unmaps the memory when the instance closes: wazero calls it from
// Close, or after a call that a done context stopped, on the goroutine that
// ran the call, so no WebAssembly code is running in it then.
func (m wasmMemory) Free() { _ = m.r.Free() }

// wasmHeapOnly makes wasmAllocator give heap memory, for the benchmark
// that compares the two.
var wasmHeapOnly bool

// heapMemory is what wasmAllocator falls back to when no address space can
// be reserved (a 32-bit process, a system without mmap.Reserve): a heap
// slice grown as wazero grows its own.
type heapMemory struct{ b []byte }

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.b)) {
		grown := make([]byte, size, size+size/4)
		copy(grown, m.b)
		m.b = grown
	}
	m.b = m.b[:size]
	return m.b
}

func (m *heapMemory) Free() { m.b = nil }

// wasmAllocator gives each decoder instance a wasmMemory of its maximum
// (at most wasmMemoryPages of 64 KiB) on 64-bit systems; a 32-bit process
// has too little address space to set 2 GiB aside for each decoder, and
// keeps heap memory.
var wasmAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	if max > 0 && max <= uint64(wasmMemoryPages)*65536 && !wasmHeapOnly && strconv.IntSize == 64 {
		if r, err := mmap.Reserve(int(max)); err == nil {
			return wasmMemory{r}
		}
	}
	return &heapMemory{}
})
