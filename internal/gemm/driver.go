package gemm

// microKernel is one register-blocked micro-kernel with its tile and the
// blocking sizes tuned for it (tune.go). The driver, the packing and the
// work split read the tile from here, so kernels with different tiles
// (the Go and AVX2 kernels' [6, 16], AVX-512's wider one) share them.
type microKernel struct {
	name   string // "avx512", "avx2", "neon" or "go" (SetKernel's names)
	impl   kernelImpl
	desc   string // what Kernel() says about it
	mr, nr int    // tile of C: rows (broadcasts of A) × columns (packed B)
	kc     int    // depth of one packed block
	kcPad  int    // row stride of a copied A block (kc plus an L1-set offset)
	mc     int    // rows of A per block
	nc     int    // columns of B packed at a time
	aOuter bool   // macro's loop order: A slab outer (B panels stream from L2)
	// aWays, when set, is how many ways of an L1 set the mr rows of an A
	// slab may take together and still be read in place (directA); 0
	// keeps the older rule for the [6, 16] kernels.
	aWays int
	// packPays: products on this kernel were measured faster on weights
	// packed once by Pool.Pack (PackPays).
	packPays bool

	// The kernel itself is run by runKernel and its packer by packKernelT,
	// which switch on name to call the assembly directly: a call through a
	// func value would make every pointer argument escape (and a Linear on
	// stack-held arguments allocate).
}

// kernelImpl says which assembly runs a microKernel (runKernel,
// packKernelT); variants of one kernel with other blocking sizes share it.
type kernelImpl uint8

const (
	implGo kernelImpl = iota
	implAVX2
	implAVX512
	implNEON
)

// maxTile bounds mr·nr over all kernels (the Worker's edge-tile buffer).
const maxTile = 14 * 32

// goKernel is the portable kernel (kernel_go.go), the reference of the
// others.
var goKernel = &microKernel{name: "go", mr: mr, nr: nr, kc: kc, kcPad: kcPad, mc: mcBlock, nc: ncBlock}

// gemmRegion computes rows [m0,m1) × columns [n0,n1) of the product on this
// worker's buffers. n0 is a multiple of the kernel's nr (a panel boundary)
// and m0 of its mr.
func (w *Worker) gemmRegion(g *gemmArgs, m0, m1, n0, n1 int) {
	if m0 >= m1 || n0 >= n1 {
		return
	}
	if w.sys != nil {
		w.sysGemm(g) // single-threaded Worker call on a system-BLAS pool
		return
	}
	if g.k == 0 {
		fillBias(g, m0, m1, n0, n1)
		return
	}
	if g.kr == nil {
		g.kr = currentKernel().kr
	}
	kr := g.kr
	w.buffers(kr)
	step := depthStep(kr, g.k)
	direct := directA(kr, g.lda)
	inPlace := g.inPlace(kr) // B packed once for kr (Pool.Pack)
	for jc := n0; jc < n1; jc += kr.nc {
		nc := min(kr.nc, n1-jc)
		for pc := 0; pc < g.k; pc += step {
			kb := min(step, g.k-pc)
			if !inPlace {
				w.packB(g, pc, kb, jc, nc)
			}
			for ic := m0; ic < m1; ic += kr.mc {
				mc := min(kr.mc, m1-ic)
				w.packA(g, ic, mc, pc, kb, direct)
				w.macro(g, ic, mc, jc, nc, pc, kb, direct, inPlace)
			}
		}
	}
}

// buffers makes sure the packing buffers fit kernel kr's blocks; they are
// allocated once per worker (and again only if a larger kernel is chosen).
func (w *Worker) buffers(kr *microKernel) {
	if na := (kr.mc + kr.mr - 1) / kr.mr * kr.mr * kr.kcPad; len(w.apack) < na {
		w.apack = make([]float32, na)
	}
	if nb := kr.kc * ((kr.nc + kr.nr - 1) / kr.nr * kr.nr); len(w.bpack) < nb {
		w.bpack = make([]float32, nb)
	}
}

// fillBias writes C = bias (or 0) for a product with k = 0.
func fillBias(g *gemmArgs, m0, m1, n0, n1 int) {
	for i := m0; i < m1; i++ {
		row := g.c[i*g.ldc+n0 : i*g.ldc+n1]
		if g.bias != nil {
			copy(row, g.bias[n0:n1])
		} else {
			clear(row)
		}
	}
}

// aMode forces the handling of A for experiments: 0 chooses by stride,
// 1 always copies, 2 reads A in place whenever possible.
var aMode = 0

// directA reports whether kernel kr may read full slabs of A in place.
// It copies A when the lda stride makes the kernel's mr rows fall on the
// same L1 sets (4 KiB aliasing, e.g. k = 1024, 4096, 5120), where they would
// evict each other and the B panel. The [6, 16] kernels copy when three or
// more rows overlap row 0's sets; a kernel with aWays set copies when any
// set would hold more than aWays lines of the slab at once (with a depth
// block spanning a whole way, more than aWays rows starting on one line
// of it).
func directA(kr *microKernel, lda int) bool {
	switch aMode {
	case 1:
		return false
	case 2:
		return true
	}
	const way = 4096 // bytes covered by one way of the L1 (32 KiB 8-way, 48 KiB 12-way)
	if kr.aWays > 0 {
		const line, sets = 64, way / 64
		var use [sets]uint8
		span := (kr.kc*4 + line - 1) / line // lines of one row's block
		if span >= sets {
			// Each row's block covers every set, so what counts is
			// which rows walk the same sets in step: those whose
			// blocks start on the same line of a way.
			for i := 0; i < kr.mr; i++ {
				first := i * lda * 4 % way / line
				if use[first]++; int(use[first]) > kr.aWays {
					return false
				}
			}
			return true
		}
		for i := 0; i < kr.mr; i++ {
			first := i * lda * 4 % way / line
			for l := 0; l < min(span, sets); l++ {
				s := (first + l) % sets
				if use[s]++; int(use[s]) > kr.aWays {
					return false
				}
			}
		}
		return true
	}
	hits := 0
	for i := 1; i < kr.mr; i++ {
		d := i * lda * 4 % way
		if d < kr.kc*4 || way-d < kr.kc*4 {
			hits++
		}
	}
	return hits < 2
}

// packA copies A[ic:ic+mc, pc:pc+kb] into apack with row stride kcPad and
// zeroes the rows up to the next multiple of mr, so edge tiles read zeros.
// With direct set only the last, partial slab is copied (to row 0 of apack):
// the kernel reads full slabs in place.
func (w *Worker) packA(g *gemmArgs, ic, mc, pc, kb int, direct bool) {
	mr, kcPad := g.kr.mr, g.kr.kcPad
	i0 := 0
	if direct {
		i0 = mc / mr * mr
		if i0 == mc {
			return
		}
	}
	for i := i0; i < mc; i++ {
		src := g.a[(ic+i)*g.lda+pc:]
		d := (i - i0) * kcPad
		copy(w.apack[d:d+kb], src[:kb])
	}
	for i := mc; (i-i0)%mr != 0; i++ {
		d := (i - i0) * kcPad
		clear(w.apack[d : d+kb])
	}
}

// packB packs B[pc:pc+kb, jc:jc+nc] into panels of nr columns: panel q holds
// bpack[q·kb·nr + p·nr + j] = B[pc+p, jc+q·nr+j], zero beyond column nc.
func (w *Worker) packB(g *gemmArgs, pc, kb, jc, nc int) {
	nr := g.kr.nr
	var part gemmArgs // one matrix of a stacked product (LinearStack)
	src := g
	for q := 0; q*nr < nc; q++ {
		j0 := jc + q*nr
		nn := min(nr, jc+nc-j0)
		dst := w.bpack[q*kb*nr : (q+1)*kb*nr]
		if g.partRows > 0 {
			// Parts end on panel boundaries (partRows is a multiple of nr).
			i := j0 / g.partRows
			part.b32, part.b16, part.pk, part.ldb, part.kind, part.kr = g.b32s[i], g.b16s[i], g.pks[i], g.ldb, g.kind, g.kr
			src, j0 = &part, j0-i*g.partRows
		}
		if g.kind == bPacked { // packed for another kernel than kr
			packFromPacked(dst, nr, src.pk, j0, nn, pc, kb)
			continue
		}
		if g.kind == bF32N {
			for p := 0; p < kb; p++ {
				row := g.b32[(pc+p)*g.ldb+j0:]
				d := dst[p*nr : p*nr+nr]
				copy(d, row[:nn])
				clear(d[nn:])
			}
			continue
		}
		if nn == nr {
			packPanelT(g.kr, dst, src, j0, pc, kb)
		} else {
			packTGo(dst, nr, src, j0, nn, pc, 0, kb)
		}
	}
}

// packPanelT packs a full transposed panel of kr.nr columns: whole groups
// of depths in the kernel's assembly packer, the rest in Go.
func packPanelT(kr *microKernel, dst []float32, g *gemmArgs, j0, pc, kb int) {
	done := packKernelT(kr, dst, g, j0, pc, kb)
	packTGo(dst, kr.nr, g, j0, kr.nr, pc, done, kb)
}

// packTGo packs rows p in [p0,p1) of a transposed panel of nr columns:
// dst[p·nr+j] = B[j0+j, pc+p] for j < nn (converted to float32), zero for
// nn ≤ j < nr.
func packTGo(dst []float32, nr int, g *gemmArgs, j0, nn, pc, p0, p1 int) {
	for j := 0; j < nn; j++ {
		off := (j0+j)*g.ldb + pc
		switch g.kind {
		case bF32T:
			for p, v := range g.b32[off+p0 : off+p1] {
				dst[(p0+p)*nr+j] = v
			}
		case bF16T:
			for p, h := range g.b16[off+p0 : off+p1] {
				dst[(p0+p)*nr+j] = F16ToF32(h)
			}
		case bBF16T:
			for p, h := range g.b16[off+p0 : off+p1] {
				dst[(p0+p)*nr+j] = BF16ToF32(h)
			}
		}
	}
	for j := nn; j < nr; j++ {
		for p := p0; p < p1; p++ {
			dst[p*nr+j] = 0
		}
	}
}

// macro runs the micro-kernel over the packed A block [mc, kb] and B block
// [kb, nc], in one of two orders: B panel outer (kr.aOuter false: each
// [kb, nr] panel of B stays in L1 while the mr-row slabs of A stream
// from L2) or A slab outer (true: each slab of A stays in L1 while the
// panels of B stream from L2, one sequential stream).
func (w *Worker) macro(g *gemmArgs, ic, mc, jc, nc, pc, kb int, direct, inPlace bool) {
	kr := g.kr
	aOuter := kr.aOuter
	switch macroOrder {
	case 1:
		aOuter = false
	case 2:
		aOuter = true
	}
	if aOuter {
		for ir := 0; ir < mc; ir += kr.mr {
			for jr := 0; jr < nc; jr += kr.nr {
				w.tile(g, ic, ir, mc, jc, jr, nc, pc, kb, direct, inPlace)
			}
		}
		return
	}
	for jr := 0; jr < nc; jr += kr.nr {
		for ir := 0; ir < mc; ir += kr.mr {
			w.tile(g, ic, ir, mc, jc, jr, nc, pc, kb, direct, inPlace)
		}
	}
}

// macroOrder forces macro's loop order for experiments: 0 the kernel's,
// 1 B panel outer, 2 A slab outer.
var macroOrder = 0

// tile runs the micro-kernel on the tile at rows ic+ir and columns jc+jr.
// Full tiles are written straight into C; edge tiles go through w.tmp and
// only their valid part is merged. With inPlace the B panel is read from
// the packed weights, else from w.bpack.
func (w *Worker) tile(g *gemmArgs, ic, ir, mc, jc, jr, nc, pc, kb int, direct, inPlace bool) {
	kr := g.kr
	mr, nr := kr.mr, kr.nr
	first := pc == 0
	nn := min(nr, nc-jr)
	var bp *float32
	if inPlace {
		bp = g.panel(jc+jr, pc, kb)
	} else {
		bp = &w.bpack[jr/nr*kb*nr]
	}
	var bias *float32
	if first && g.bias != nil && nn == nr {
		bias = &g.bias[jc+jr]
	}
	mm := min(mr, mc-ir)
	ap, lda := &w.apack[ir*kr.kcPad], kr.kcPad
	if direct {
		if mm == mr {
			ap, lda = &g.a[(ic+ir)*g.lda+pc], g.lda
		} else {
			ap = &w.apack[0]
		}
	}
	ci := (ic+ir)*g.ldc + jc + jr
	if mm == mr && nn == nr {
		runKernel(kr, kb, ap, lda, bp, &g.c[ci], g.ldc, g.alpha, bias, !first)
		return
	}
	if nn > nr/2 || !runKernelHalf(kr, kb, ap, lda, bp, &w.tmp[0], nr, g.alpha) {
		runKernel(kr, kb, ap, lda, bp, &w.tmp[0], nr, g.alpha, nil, false)
	}
	for i := 0; i < mm; i++ {
		row := g.c[ci+i*g.ldc : ci+i*g.ldc+nn]
		t := w.tmp[i*nr : i*nr+nn]
		switch {
		case !first:
			for j := range row {
				row[j] += t[j]
			}
		case g.bias != nil:
			for j := range row {
				row[j] = g.bias[jc+jr+j] + t[j]
			}
		default:
			copy(row, t)
		}
	}
}
