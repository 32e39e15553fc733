package gemm

// Blocking sizes, in elements, tuned for Zen 3/4 (32 KiB 8-way L1d,
// 512 KiB–1 MiB L2 per core, shared L3; the development machine reports an
// AMD EPYC with 1 MiB L2, whose 256-bit FMA pipes peak near 32 flop/cycle
// per core). The micro-kernel keeps a [mr, nr] tile of C in twelve ymm
// registers; at kc = 256 it runs at ~100 GFLOP/s per core there, on par with
// OpenBLAS 0.3.21 (see BenchmarkRatio).
const (
	mr = 6  // rows of C per micro-kernel call (broadcasts of A)
	nr = 16 // columns of C per micro-kernel call (two ymm of packed B)

	// kc is the depth of one packed block: a B panel [kc, nr] is 16 KiB and
	// stays in L1 while the kernel sweeps the A block.
	kc = 256
	// kcPad is the row stride of a copied A block; the extra 8 floats keep
	// the mr rows from aliasing the same L1 sets (4 KiB strides).
	kcPad = kc + 8
	// mcBlock rows of A are copied at a time: mcBlock·kcPad·4 ≈ 150 KiB, in L2.
	mcBlock = 144
	// ncBlock columns of B are packed at a time: kc·ncBlock·4 = 1 MiB.
	ncBlock = 1024

	// parallelFlops is the smallest product (2·m·n·k) worth splitting
	// across workers; below it the caller's worker does it alone.
	parallelFlops = 1 << 21

	// A product on several workers is cut into up to chunksPerWorker chunks
	// per worker, taken dynamically, no narrower than minChunkCols columns
	// (minChunkColsCopy when A must be copied, since each chunk copies its
	// rows of A); see gemmSplit.plan.
	chunksPerWorker  = 4
	minChunkCols     = 128
	minChunkColsCopy = 256
)
