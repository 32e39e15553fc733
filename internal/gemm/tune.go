package gemm

// Blocking sizes, in elements. Each micro-kernel has its own tile and
// blocks (see microKernel in driver.go); the work split below is shared.
//
// The Go, AVX2 and NEON kernels' sizes were tuned for Zen 3/4 (32 KiB 8-way
// L1d, 512 KiB–1 MiB L2 per core, shared L3; the development machine
// reported an AMD EPYC with 1 MiB L2, whose 256-bit FMA pipes peak near 32
// flop/cycle per core). The AVX2 kernel keeps a [mr, nr] tile of C in
// twelve ymm registers; at kc = 256 it ran at ~100 GFLOP/s per core there,
// on par with OpenBLAS 0.3.21 (see BenchmarkRatio).
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
)

// The AVX-512 kernel, tuned on a 2-core KVM guest whose CPUID says Intel
// family 6 model 0xcf (Emerald Rapids, the Sapphire Rapids core: 48 KiB
// 12-way L1d, 2 MiB L2 per core, two 512-bit FMA pipes, 64 flop/cycle per
// core). Its [14, 32] tile of C fills 28 of the 32 zmm registers; the other
// four hold a row of B and two broadcasts of A. On data in L1 it runs at
// 176 GFLOP/s on one core there (BenchmarkMicroKernel; AVX2: 82–89), and
// at 0.8–1.0× OpenBLAS 0.3.21's SkylakeX sgemm on the model's shapes
// (BenchmarkKernels); BenchmarkTile compares blockings, which differed by
// less than the noise of the shared machine.
const (
	mr512 = 14 // rows of C per call
	nr512 = 32 // columns of C per call (two zmm of packed B)
	// kc512: a B panel [kc512, 32] is 32 KiB, two thirds of the L1d, next
	// to the 14 rows of A streaming through.
	kc512 = 256
	// mc512 rows of A are copied at a time (12 slabs, ≈ 185 KiB, in L2).
	mc512 = 168
	// nc512 columns of B are packed at a time: kc512·nc512·4 = 1 MiB, half
	// the L2.
	nc512 = 1024
)

// The split of one product across a Pool's workers (gemmSplit in pool.go).
const (
	// parallelFlops is the smallest product (2·m·n·k) worth splitting
	// across workers; below it the caller's worker does it alone.
	parallelFlops = 1 << 21

	// Chunks are at least minChunkCols columns wide (minChunkColsCopy when
	// A must be copied, since each chunk copies its rows of A): narrower
	// ones would pass over A too often.
	minChunkCols     = 128
	minChunkColsCopy = 256
	// Row groups, when C is too narrow for column strips, span at least
	// minChunkSlabs slabs of mr rows.
	minChunkSlabs = 2
	// guidedSpread: each chunk takes 1/(guidedSpread·t) of what remains,
	// so t workers start on chunks of about 1/(guidedSpread·t) of C and
	// the last chunks are minChunkCols wide.
	guidedSpread = 2

	// parallelChunks: Parallel and ShareWorkers cut their loops into up
	// to this many chunks per worker, handed out as workers free up.
	parallelChunks = 4
)
