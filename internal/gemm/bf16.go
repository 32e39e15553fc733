package gemm

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The bf16 path: weights packed once as bfloat16, activations rounded to
// bfloat16 (nearest even) while packing A, products accumulated in float32
// by a micro-kernel that computes a [mr, 32] block of C:
//
//	AMX-BF16 tiles      mr = 32  TDPBF16PS on 2×2 tiles of [16, 16]
//	AVX512_BF16         mr = 12  VDPBF16PS, C in 24 zmm registers
//	portable Go         mr = 12  same arithmetic, for CPUs without either
//
// Layouts (bf16 elements, depths padded with zeros to kp = Cols rounded up
// to 32, columns to np = Rows rounded up to 32):
//
//	packed B (weights)  [np/16 panels][kp/2 depth pairs][16 columns][2]
//	                    (the "VNNI" pairs both instructions read: a 64-byte
//	                    row per depth pair, an AMX B tile is 16 such rows)
//	packed A            [mp, kp] row-major, mp = m rounded up to mr; for
//	                    AMX in tiles [mp/16][kp/32][16 rows][32 depths]
//	                    (1 KiB each, contiguous: no strided tile loads)
//
// Blocking, for one chunk of columns: for jc step bf16NC (B block in L2),
// for pc over depth blocks of equal length ≤ bf16KC (the C block
// accumulates across them in y), for ir step mr (A micro-panel in L2), for
// jr step 32: kernel. Kernels with a strip form (AMX) take the whole jr loop
// in one call, so the tile configuration is loaded once per [32, 256]
// strip rather than once per [32, 32] block (4-16% faster on the model's
// shapes at one thread: BenchmarkBF16AMXStrip). The depth blocks are long
// because reloading C from y between them costs more than streaming A and
// B from L2 (the model's k ≤ 1280 takes one block, 4096 two, 5120 three of
// 1728; blocks of 384 or 512 ran 15-25% slower); measured on a 2-core
// Emerald Rapids, BenchmarkBF16AMX. Blocks that cross the edge of y (m or
// n not a multiple of the block) run over the whole depth into a scratch
// block (the last rows: a strip) that is then copied.
const (
	bf16NR     = 32   // columns of C per kernel call (two panels of 16)
	bf16KAlign = 32   // depth padding: one AMX A tile row of 32 bf16
	bf16KC     = 2048 // depths per block: AMX A micro-panel 32·2048·2 = 128 KiB
	bf16NC     = 256  // columns per B block: 256·2048·2 = 1 MiB, in L2 (2 MiB)

	// bf16ChunksPerWorker column chunks per worker are handed out
	// dynamically, so a descheduled worker takes fewer of them.
	bf16ChunksPerWorker = 4
	bf16GoMR            = 12
)

// PackedBF16 is a weight Matrix [Rows, Cols] (HF nn.Linear layout, y = x·wᵀ)
// packed once for the bf16 kernels: each weight rounded to bfloat16 (nearest
// even; f16 and bf16 sources are widened exactly first), laid out as the
// kernels read it, 2 bytes a weight plus the padding of Rows and Cols to
// multiples of 32. Its memory lies outside the Go heap and is freed when
// the *PackedBF16 is collected: use it through that pointer (a copy of the
// struct does not keep the memory).
type PackedBF16 struct {
	Rows, Cols int
	kp, np     int      // Cols and Rows rounded up to 32
	data       []uint16 // [np/16][kp/2][16][2]
	// keep holds what owns data when p is a view of another's memory
	// (PackBF16Group's parts, StackBF16's stacks).
	keep []*PackedBF16
}

// RoundBF16 rounds a float32 to the nearest bfloat16, ties to even.
// Infinities stay infinite, values beyond the largest bfloat16 round to
// infinity, subnormals round like any other value (VDPBF16PS and TDPBF16PS
// then treat bfloat16 subnormals as zero; the portable kernel and
// LinearBF16Ref do not), and NaNs keep their sign and top payload bits with
// the quiet bit set.
func RoundBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN
		return uint16((u | 0x00400000) >> 16)
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// PackBF16 packs w for LinearBF16. It returns an error for a nil or
// malformed matrix (negative shape, short data, unknown dtype).
func PackBF16(w *Matrix) (*PackedBF16, error) {
	if err := validBF16(w); err != nil {
		return nil, err
	}
	p := newPackedBF16(w.Rows, w.Cols)
	p.data = offHeap[uint16](p, p.np*p.kp)
	packBF16Into(p, w)
	return p, nil
}

// PackBF16Group packs each of ws as PackBF16 does, into one allocation:
// the panels of ws[i+1] start where those of ws[i] end, so StackBF16 can
// view matrices of equal Cols and Rows multiples of 32 as one (the query,
// key and value projections of a layer).
func PackBF16Group(ws ...*Matrix) ([]*PackedBF16, error) {
	total := 0
	for _, w := range ws {
		if err := validBF16(w); err != nil {
			return nil, err
		}
		total += BF16Bytes(w.Rows, w.Cols) / 2
	}
	owner := &PackedBF16{}
	all := offHeap[uint16](owner, total)
	ps := make([]*PackedBF16, len(ws))
	off := 0
	for i, w := range ws {
		p := newPackedBF16(w.Rows, w.Cols)
		n := p.np * p.kp
		p.data, p.keep = all[off:off+n:off+n], []*PackedBF16{owner}
		packBF16Into(p, w)
		ps[i], off = p, off+n
	}
	return ps, nil
}

// StackBF16 returns the rows of ps end to end, ps[0]'s first, as one
// packed matrix [Σ Rows, Cols] viewing their memory, so that one
// LinearBF16 computes what one per matrix would, bit for bit (every
// output is the same sum in the same order), with one packing of x and
// one wait for the workers instead of len(ps). It returns nil unless ps
// have equal Cols, every Rows is a multiple of 32 (no padding between
// them), and each one's panels start where the previous one's end (as
// PackBF16Group packs them, or a file maps them end to end). The result
// keeps ps alive.
func StackBF16(ps ...*PackedBF16) *PackedBF16 {
	if len(ps) == 0 || ps[0] == nil {
		return nil
	}
	rows, n := 0, 0
	for i, p := range ps {
		if p == nil || p.Cols != ps[0].Cols || p.Rows%bf16NR != 0 || len(p.data) == 0 {
			return nil
		}
		if i > 0 && unsafe.Pointer(&p.data[0]) != unsafe.Add(unsafe.Pointer(&ps[i-1].data[0]), 2*len(ps[i-1].data)) {
			return nil
		}
		rows, n = rows+p.Rows, n+len(p.data)
	}
	s := newPackedBF16(rows, ps[0].Cols)
	s.data, s.keep = unsafe.Slice(&ps[0].data[0], n), ps
	return s
}

func newPackedBF16(rows, cols int) *PackedBF16 {
	return &PackedBF16{Rows: rows, Cols: cols, kp: roundUp(cols, bf16KAlign), np: roundUp(rows, bf16NR)}
}

// validBF16 is PackBF16's validation of w.
func validBF16(w *Matrix) error {
	if w == nil {
		return errors.New("pack bf16: nil weight matrix")
	}
	n, k := w.Rows, w.Cols
	if n < 0 || k < 0 {
		return fmt.Errorf("pack bf16: negative shape [%d, %d]", n, k)
	}
	have := len(w.U16)
	if w.Dtype == F32 {
		have = len(w.F32)
	}
	if w.Dtype > BF16 {
		return fmt.Errorf("pack bf16: unknown dtype %v", w.Dtype)
	}
	if have < n*k {
		return fmt.Errorf("pack bf16: %v weights [%d, %d] need %d elements, have %d", w.Dtype, n, k, n*k, have)
	}
	return nil
}

// packBF16Into fills p's zeroed panels from w (checked by validBF16).
func packBF16Into(p *PackedBF16, w *Matrix) {
	n, k := w.Rows, w.Cols
	for j := range n {
		panel := p.data[j/16*p.kp*16:]
		col := (j % 16) * 2
		for q := range k {
			var h uint16
			switch w.Dtype {
			case F32:
				h = RoundBF16(w.F32[j*k+q])
			case F16:
				h = RoundBF16(F16ToF32(w.U16[j*k+q])) // exact widening, one rounding
			case BF16:
				h = w.U16[j*k+q]
			}
			panel[q/2*32+col+q%2] = h
		}
	}
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// bf16KernelFunc computes a [mr, 32] block of C (mr the implementation's):
//
//	C[i][j] = init[i·ldi + j] + Σ_q A[i][q]·B[q][j]   for q in [0, k)
//
// with A at a (row stride lda bytes, k bf16 a row; for tiledA kernels the
// 16-row tiles of the packed layout, lda bytes from one 16 rows to the
// next), B the two 16-column
// panels starting at b and b+ldp bytes (k/2 rows of 16 pairs each), k a
// multiple of 32, C at c with row stride ldc bytes. ldi may be 0 (every row
// starts from the same 32 values: the bias) and init may equal c (the block
// accumulates). cfg is the AMX tile configuration (ignored by the others).
type bf16KernelFunc func(cfg *byte, a *uint16, lda int, b *uint16, ldp int, k int, c *float32, ldc int, init *float32, ldi int)

// bf16StripFunc is a bf16KernelFunc over nb ≥ 1 blocks side by side: block
// j reads B at b + j·2·ldp bytes, writes C at c + 128·j bytes and starts
// from init + 128·j bytes (the same A rows for all).
type bf16StripFunc func(cfg *byte, a *uint16, lda int, b *uint16, ldp int, k int, c *float32, ldc int, init *float32, ldi int, nb int)

// bf16Impl is one bf16 micro-kernel.
type bf16Impl struct {
	name   string
	mr     int
	tiledA bool // A packed in [16, 32] tiles, not row-major
	kern   bf16KernelFunc
	strip  bf16StripFunc // nil: columns calls kern once a block
}

// amxConfig is the AMX tile configuration (palette 1): all eight tiles are
// 16 rows of 64 bytes (C: 16 float32, A: 32 bf16, B: 16 bf16 pairs).
var amxConfig = func() (c [64]byte) {
	c[0] = 1
	for t := range 8 {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return c
}()

var bf16GoImpl = &bf16Impl{name: "portable Go (bf16 reference arithmetic)", mr: bf16GoMR, kern: kernelBF16Go}

// bf16State is the kernel LinearBF16 runs, and the error BF16Kernel reports
// (nil unless the CPU has no bf16 instructions, when impl is the Go kernel).
var bf16State atomic.Pointer[bf16Choice]

type bf16Choice struct {
	impl *bf16Impl
	err  error
}

func init() {
	impl, err := bf16Best()
	if err != nil {
		impl = bf16GoImpl
	}
	bf16State.Store(&bf16Choice{impl, err})
}

// BF16Kernel names the bf16 kernel this CPU runs ("AMX-BF16 tiles",
// "AVX512_BF16 VDPBF16PS"), or returns an error naming what the CPU (or the
// build, or the operating system) lacks. LinearBF16 still works on such a
// CPU, on a slow portable Go kernel; callers offering bf16 to users should
// refuse it when BF16Kernel returns an error.
func BF16Kernel() (string, error) {
	c := bf16State.Load()
	if c.err != nil {
		return "", c.err
	}
	return c.impl.name, nil
}

// SetBF16Kernel forces the kernel LinearBF16 runs, for tests and
// benchmarks: "amx", "avx512bf16", "go" (the portable kernel), or "" for the
// best this CPU has. It returns an error, and changes nothing, when the CPU
// cannot run the kernel asked for. Products already running finish on the
// kernel they started with.
func SetBF16Kernel(name string) error {
	if name == "" {
		impl, err := bf16Best()
		if err != nil {
			impl = bf16GoImpl
		}
		bf16State.Store(&bf16Choice{impl, err})
		return nil
	}
	impl, err := bf16ByName(name)
	if err != nil {
		return fmt.Errorf("set bf16 kernel %s: %w", name, err)
	}
	bf16State.Store(&bf16Choice{impl, nil})
	return nil
}

// bf16ByName returns the kernel SetBF16Kernel names "amx", "avx512bf16"
// or "go", or why this CPU cannot run it.
func bf16ByName(name string) (*bf16Impl, error) {
	switch name {
	case "go":
		return bf16GoImpl, nil
	case "amx":
		return bf16AMX()
	case "avx512bf16":
		return bf16AVX512()
	}
	return nil, fmt.Errorf("unknown kernel %q (want amx, avx512bf16, go or empty)", name)
}

// bf16Best returns the fastest kernel this CPU runs: AMX, then AVX512_BF16.
func bf16Best() (*bf16Impl, error) {
	if impl, err := bf16AMX(); err == nil {
		return impl, nil
	}
	if impl, err := bf16AVX512(); err == nil {
		return impl, nil
	}
	return nil, bf16Missing()
}

// LinearBF16 computes y[m, w.Rows] = x[m, w.Cols] · wᵀ + bias with the bf16
// kernel (see BF16Kernel), using all the pool's workers: x is rounded to
// bfloat16 (nearest even) while packing, products accumulate in float32.
// bias, when not nil, has w.Rows elements. x and y are dense row-major and
// must not overlap. Like Linear, it panics when a slice is shorter than the
// shapes require, and must not be called from inside a Parallel callback
// (use Worker.LinearBF16 there).
func (p *Pool) LinearBF16(y, x []float32, m int, w *PackedBF16, bias []float32) {
	p.bf16Mu.Lock()
	defer p.bf16Mu.Unlock()
	g := newBF16Args(y, x, m, w, bias, &p.bf16A)
	if g == nil {
		return
	}
	defer g.release()
	t := p.Threads()
	if t == 1 || 2*float64(m)*float64(w.Rows)*float64(w.Cols) < parallelFlops {
		g.packRows(0, g.mp)
		g.block(0, m, 0, w.np)
		return
	}
	p.Parallel(g.mp, g.packRows)
	// Chunks of whole columns, or, when the product is too narrow for
	// that many chunks of a B block (bf16NC columns) or more, chunks of a
	// B block and some of the rows: narrower column chunks each stream all
	// of A once more and make shorter strips (measured 10-50% faster on
	// the model's n ≤ 1280 shapes at 2 threads, BenchmarkBF16AMX).
	mr, blocks, target := g.impl.mr, w.np/bf16NR, t*bf16ChunksPerWorker
	panels := g.mp / mr
	colChunks, rowParts := min(blocks, target), 1
	if wide := (w.np + bf16NC - 1) / bf16NC; wide < target {
		colChunks, rowParts = wide, min(panels, (target+wide-1)/wide)
	}
	chunks := rowParts * colChunks
	var next atomic.Int64
	p.Parallel(t, func(_, _ int) {
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			rp, cc := c%rowParts, c/rowParts
			i0, i1 := rp*panels/rowParts*mr, min(m, (rp+1)*panels/rowParts*mr)
			g.block(i0, i1, cc*blocks/colChunks*bf16NR, (cc+1)*blocks/colChunks*bf16NR)
		}
	})
}

// LinearBF16 is Pool.LinearBF16 on this worker alone (single-threaded), for
// use inside ParallelWorkers callbacks.
func (w *Worker) LinearBF16(y, x []float32, m int, wt *PackedBF16, bias []float32) {
	g := newBF16Args(y, x, m, wt, bias, &w.bf16A)
	if g == nil {
		return
	}
	defer g.release()
	g.packRows(0, g.mp)
	g.block(0, m, 0, wt.np)
}

// bf16Args is one validated LinearBF16 with its packed A.
type bf16Args struct {
	impl    *bf16Impl
	y, x    []float32
	m, n, k int
	mp      int
	w       *PackedBF16
	bias    []float32 // np elements, zeros when the caller gave none
	ap      []uint16  // [mp, kp], in the caller's buffer
}

// bf16Biases recycles padded biases between calls.
var bf16Biases sync.Pool

// bf16Tmp recycles block's scratch for edge blocks.
var bf16Tmp = sync.Pool{New: func() any { return new([32 * bf16NC]float32) }}

// newBF16Args validates the arguments and prepares the buffers, the packed
// A in *abuf (grown when too small); it returns nil when there is nothing
// to compute beyond y = bias.
func newBF16Args(y, x []float32, m int, w *PackedBF16, bias []float32, abuf *[]uint16) *bf16Args {
	if w == nil {
		panic("gemm: LinearBF16 with nil weights")
	}
	n, k := w.Rows, w.Cols
	if m < 0 {
		panic(fmt.Sprintf("gemm: LinearBF16 with negative m=%d", m))
	}
	need(len(x), m, k, k, "x")
	need(len(y), m, n, n, "y")
	if bias != nil && len(bias) < n {
		panic(fmt.Sprintf("gemm: LinearBF16 bias has %d elements, want %d", len(bias), n))
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		for i := range m {
			row := y[i*n : i*n+n]
			for j := range row {
				row[j] = 0
				if bias != nil {
					row[j] = bias[j]
				}
			}
		}
		return nil
	}
	impl := bf16State.Load().impl
	g := &bf16Args{impl: impl, y: y, x: x, m: m, n: n, k: k, mp: roundUp(m, impl.mr), w: w}
	if need := g.mp * w.kp; len(*abuf) < need {
		*abuf = make([]uint16, need)
	}
	g.ap = (*abuf)[:g.mp*w.kp]
	bp := getF32(w.np)
	g.bias = bp[:w.np]
	copy(g.bias, bias)
	clear(g.bias[min(len(bias), n):])
	return g
}

func (g *bf16Args) release() {
	b := g.bias
	bf16Biases.Put(&b)
}

func getF32(n int) []float32 {
	if b, ok := bf16Biases.Get().(*[]float32); ok && cap(*b) >= n {
		return *b
	}
	return make([]float32, n)
}

// packRows rounds rows [lo, hi) of x into the packed A, zero-padding the
// depths to kp and the rows beyond m.
func (g *bf16Args) packRows(lo, hi int) {
	kp := g.w.kp
	if !g.impl.tiledA {
		for i := lo; i < hi; i++ {
			dst := g.ap[i*kp : (i+1)*kp]
			if i >= g.m {
				clear(dst)
				continue
			}
			roundBF16Slice(dst[:g.k], g.x[i*g.k:(i+1)*g.k])
			clear(dst[g.k:])
		}
		return
	}
	// Row i of the tiles: 32 depths at a time, 512 elements (a tile) apart.
	for i := lo; i < hi; i++ {
		base := g.ap[i/16*kp*16+i%16*32:]
		q := 0
		if i < g.m {
			roundBF16Tiled(base, g.x[i*g.k:(i+1)*g.k])
			q = g.k
		}
		for ; q < kp; q++ {
			base[q/32*512+q%32] = 0
		}
	}
}

// block computes rows [i0, i1) and columns [j0, j1) of y: i0 a multiple
// of mr, i1 a multiple of mr or m, j0 a multiple of 32, j1 a multiple of
// 32 or np.
func (g *bf16Args) block(i0, i1, j0, j1 int) {
	impl, w := g.impl, g.w
	mr, kp, n := impl.mr, w.kp, g.n
	mFull, nFull := g.m-g.m%mr, n-n%bf16NR
	// Edge blocks, a strip of rows or a block, go through tmp: recycled,
	// since the kernels are called through func values and a local array
	// would be allocated on the heap at every call (32 KiB, 8-16 times a
	// product: 47 MB more peak RSS on a ViT-H/14 image pass).
	tp := bf16Tmp.Get().(*[32 * bf16NC]float32)
	defer bf16Tmp.Put(tp)
	tmp := tp[:]
	cfg := &amxConfig[0]
	// A at row ir (a multiple of mr), depth pc: row-major, or in tiles (ir
	// a multiple of 16: tile ir/16, step pc/32, like the B panels).
	lda, aStep := kp*2, 1
	if impl.tiledA {
		lda, aStep = kp*32, 16
	}
	// Depth blocks of equal length (a multiple of 32), at most bf16KC.
	blocks := (kp + bf16KC - 1) / bf16KC
	kc := roundUp((kp+blocks-1)/blocks, bf16KAlign)
	for jc := j0; jc < j1; jc += bf16NC {
		je := min(jc+bf16NC, j1)
		ie := min(je, nFull)
		for pc := 0; pc < kp && jc < ie; pc += kc {
			kb := min(kc, kp-pc)
			for ir := i0; ir < min(i1, mFull); ir += mr {
				a := &g.ap[ir*kp+pc*aStep]
				if impl.strip != nil {
					c := &g.y[ir*n+jc]
					init, ldi := &g.bias[jc], 0
					if pc > 0 {
						init, ldi = c, n*4
					}
					impl.strip(cfg, a, lda, &w.data[jc*kp+pc*16], kp*32, kb, c, n*4, init, ldi, (ie-jc)/bf16NR)
					continue
				}
				for jr := jc; jr < ie; jr += bf16NR {
					c := &g.y[ir*n+jr]
					init, ldi := &g.bias[jr], 0
					if pc > 0 {
						init, ldi = c, n*4
					}
					impl.kern(cfg, a, lda, &w.data[jr*kp+pc*16], kp*32, kb, c, n*4, init, ldi)
				}
			}
		}
		// Edge blocks, each over the whole depth into tmp: the last rows
		// (fewer than mr) of the full column blocks as one strip, then the
		// last columns (fewer than 32) of every row block.
		if i0 <= mFull && mFull < i1 && jc < ie {
			a := &g.ap[mFull*kp]
			if impl.strip != nil {
				impl.strip(cfg, a, lda, &w.data[jc*kp], kp*32, kp, &tmp[0], bf16NC*4, &g.bias[jc], 0, (ie-jc)/bf16NR)
			} else {
				for jr := jc; jr < ie; jr += bf16NR {
					impl.kern(cfg, a, lda, &w.data[jr*kp], kp*32, kp, &tmp[jr-jc], bf16NC*4, &g.bias[jr], 0)
				}
			}
			for i := mFull; i < g.m; i++ {
				copy(g.y[i*n+jc:i*n+ie], tmp[(i-mFull)*bf16NC:])
			}
		}
		for ir := i0; ir < i1 && ie < je; ir += mr {
			impl.kern(cfg, &g.ap[ir*kp], lda, &w.data[ie*kp], kp*32, kp, &tmp[0], bf16NR*4, &g.bias[ie], 0)
			for i := ir; i < min(ir+mr, g.m); i++ {
				copy(g.y[i*n+ie:i*n+min(je, n)], tmp[(i-ir)*bf16NR:])
			}
		}
	}
}

// kernelBF16Go is the portable bf16KernelFunc for mr = bf16GoMR. A product
// of two bfloat16 values is exact in float32, so each step rounds once, as
// in the instructions (which differ only in flushing subnormals to zero).
func kernelBF16Go(_ *byte, a *uint16, lda int, b *uint16, ldp int, k int, c *float32, ldc int, init *float32, ldi int) {
	lda, ldp, ldc, ldi = lda/2, ldp/2, ldc/4, ldi/4
	as := unsafe.Slice(a, (bf16GoMR-1)*lda+k)
	bs := unsafe.Slice(b, ldp+k*16)
	is := unsafe.Slice(init, (bf16GoMR-1)*ldi+bf16NR)
	var acc [bf16GoMR][bf16NR]float32
	for i := range bf16GoMR {
		copy(acc[i][:], is[i*ldi:])
	}
	for i := range bf16GoMR {
		ar := as[i*lda : i*lda+k]
		for j := range bf16NR {
			panel := bs[j/16*ldp+j%16*2:]
			s := acc[i][j]
			for q := 0; q < k; q += 2 {
				s += BF16ToF32(ar[q]) * BF16ToF32(panel[q*16])
				s += BF16ToF32(ar[q+1]) * BF16ToF32(panel[q*16+1])
			}
			acc[i][j] = s
		}
	}
	cs := unsafe.Slice(c, (bf16GoMR-1)*ldc+bf16NR)
	for i := range bf16GoMR {
		copy(cs[i*ldc:i*ldc+bf16NR], acc[i][:])
	}
}

// LinearBF16Ref is the plain-loop oracle of LinearBF16 on the unpacked
// weights: x and w rounded to bfloat16 (nearest even), y = bias + the
// products summed in float32 in order of depth.
func LinearBF16Ref(y, x []float32, m int, w *Matrix, bias []float32) {
	n, k := w.Rows, w.Cols
	wr := make([]float32, n*k)
	for i := range wr {
		switch w.Dtype {
		case F32:
			wr[i] = BF16ToF32(RoundBF16(w.F32[i]))
		case F16:
			wr[i] = BF16ToF32(RoundBF16(F16ToF32(w.U16[i])))
		case BF16:
			wr[i] = BF16ToF32(w.U16[i])
		}
	}
	xr := make([]float32, k)
	for i := range m {
		for p := range k {
			xr[p] = BF16ToF32(RoundBF16(x[i*k+p]))
		}
		for j := range n {
			var s float32
			if bias != nil {
				s = bias[j]
			}
			for p, v := range xr {
				s += v * wr[j*k+p]
			}
			y[i*n+j] = s
		}
	}
}
