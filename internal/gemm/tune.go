package gemm

// Blocking sizes, in elements, tuned for Zen 3/4 (32 KiB L1d, 512 KiB–1 MiB
// L2 per core, shared L3). The micro-kernel keeps a [mr, nr] tile of C in
// twelve ymm registers.
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

	// A product on several workers is cut into about chunksPerWorker chunks
	// per worker, taken dynamically, but no narrower than minChunkCols
	// columns (minChunkColsCopy when A must be copied, since each chunk
	// copies all of A).
	chunksPerWorker  = 4
	minChunkCols     = 128
	minChunkColsCopy = 256
)
