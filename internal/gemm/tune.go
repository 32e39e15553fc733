package gemm

// Blocking sizes, in elements. Each micro-kernel has its own tile and
// blocks (see microKernel in driver.go); the work split below is shared.
//
// The Go and NEON kernels' sizes were tuned for Zen 3/4 (32 KiB 8-way
// L1d, 512 KiB–1 MiB L2 per core, shared L3; the development machine
// reported an AMD EPYC with 1 MiB L2, whose 256-bit FMA pipes peak near 32
// flop/cycle per core), and were the AVX2 kernel's until it was measured
// with its weights packed once (kcAVX2 below). The AVX2 kernel keeps a
// [mr, nr] tile of C in twelve ymm registers; at kc = 256 it ran at ~100
// GFLOP/s per core there, on par with OpenBLAS 0.3.21 (see BenchmarkRatio).
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

// The AVX2 kernel's depth and row blocks with its weights packed once (as
// the model's are), measured on an AMD EPYC Zen 3 (AVX2 only: 32 KiB
// 8-way L1d, 512 KiB L2 per core), two threads, BenchmarkTile's blockings
// interleaved in one process, four runs (-gemm.tilekernel avx2
// -gemm.tilepacked): as for the AVX-512 kernel on Zen 5, a depth of 1280,
// the whole K of the image tower's qkv, out and fc1, ran the linear shapes
// of both towers at 176–189 GFLOP/s where 256 ran them at 120–180 (slower
// than 1280 on every shape in most runs; the runs scatter by up to 10%), C
// written once instead of K/256 times. Row blocks of 48, 72 and 96 were
// level; 48 keeps the copied A block (48·1296·4 = 243 KiB) within a
// 256 KiB L2 as well. At that depth every row of a slab covers every L1
// set, so A is read in place only at strides where at most aWaysAVX2 of
// its 6 rows start on one line of a way (the activations are laid out so,
// see Stride): with 4, five of the 9 shapes ran faster than copying every
// slab in both runs (image qkv 187–189 against 149–174 GFLOP/s, image out
// and fc2, text qkv and out by 2–10%), text fc1 slower (169–179 against
// 183), the other three mixed (1280/48/1024b against …bw4 in
// BenchmarkTile, two runs, A at each variant's Stride).
const (
	kcAVX2    = 1280
	mcAVX2    = 48
	aWaysAVX2 = 4
)

// The AVX-512 kernel, first tuned on a 2-core KVM guest whose CPUID says
// Intel family 6 model 0xcf (Emerald Rapids, the Sapphire Rapids core:
// 48 KiB 12-way L1d, 2 MiB L2 per core, two 512-bit FMA pipes, 64
// flop/cycle per core). Its [14, 32] tile of C fills 28 of the 32 zmm
// registers; the other four hold a row of B and two broadcasts of A. On
// data in L1 it runs at the FMA peak (BenchmarkMicroKernel against
// BenchmarkFMAPeak), and at 0.8–1.0× OpenBLAS 0.3.21's SkylakeX sgemm on
// the model's shapes (BenchmarkKernels).
//
// The depth kc512 was then measured on an AMD EPYC Zen 5 (48 KiB L1d,
// 1 MiB L2 per core), two threads, with BenchmarkTile's blockings
// interleaved in one process: a depth of 1280, the whole of the image
// tower's K for its qkv, out and fc1 products, ran every linear shape of
// both towers 3–14% faster than 256 (the image tower's 3–10%) with the
// weights packed once, 0–15% packed block by block. A depth of 256 kept the B panel
// (32 KiB) and the A slab in L1, but made every product read and write
// its C K/256 times over, and C's rows, 5–20 KiB apart, fall on few L1
// sets; at the full depth C is written once and both operands stream from
// L2, which the hardware prefetchers keep up with (software prefetches of
// either operand measured 2–5% slower).
const (
	mr512 = 14 // rows of C per call
	nr512 = 32 // columns of C per call (two zmm of packed B)
	// kc512: the depth of one block, a B panel [kc512, 32] of 160 KiB and
	// an A slab [14, kc512] of 70 KiB, both streaming from L2.
	kc512 = 1280
	// mc512 rows of A make one block (5 slabs, 350 KiB at the full
	// depth), which stays in L2 while each B panel of the block's columns
	// streams past it once (the kernel's loop order is B panel outer):
	// against blocks of 168 rows with the A slab outer, which streamed
	// every B panel of a worker's columns past each slab, the image
	// tower's products ran 2–5% faster and the text tower's up to 5%
	// (BenchmarkTile, two threads, interleaved, Zen 5: 70/b against
	// 168/a; 56 rows measured the same, 84 and 112 a little less).
	mc512 = 70
	// nc512 columns of B are packed at a time when the weights are not
	// packed once (kc512·nc512·4 = 5 MiB a worker); a worker's column
	// strip of the model's products is narrower than this.
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
