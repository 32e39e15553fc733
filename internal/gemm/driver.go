package gemm

// gemmRegion computes rows [m0,m1) × columns [n0,n1) of the product on this
// worker's buffers. n0 is a multiple of nr (a panel boundary) and m0 of mr.
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
	if w.bpack == nil {
		w.apack = make([]float32, (mcBlock+mr-1)/mr*mr*kcPad)
		w.bpack = make([]float32, kc*((ncBlock+nr-1)/nr*nr))
	}
	for jc := n0; jc < n1; jc += ncBlock {
		nc := min(ncBlock, n1-jc)
		for pc := 0; pc < g.k; pc += kc {
			kb := min(kc, g.k-pc)
			w.packB(g, pc, kb, jc, nc)
			for ic := m0; ic < m1; ic += mcBlock {
				mc := min(mcBlock, m1-ic)
				direct := directA(g.lda)
				w.packA(g, ic, mc, pc, kb, direct)
				w.macro(g, ic, mc, jc, nc, pc, kb, direct)
			}
		}
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

// directA reports whether the kernel may read full slabs of A in place.
// It copies A when the lda stride makes three or more of the mr rows fall
// on the same L1 sets (4 KiB aliasing, e.g. k = 1024, 4096, 5120), where
// they would evict each other and the B panel.
func directA(lda int) bool {
	switch aMode {
	case 1:
		return false
	case 2:
		return true
	}
	const way = 4096 // bytes covered by one way of a 32 KiB 8-way L1
	hits := 0
	for i := 1; i < mr; i++ {
		d := i * lda * 4 % way
		if d < kc*4 || way-d < kc*4 {
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
	for q := 0; q*nr < nc; q++ {
		j0 := jc + q*nr
		nn := min(nr, jc+nc-j0)
		dst := w.bpack[q*kb*nr : (q+1)*kb*nr]
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
			packPanelT(dst, g, j0, pc, kb)
		} else {
			packTGo(dst, g, j0, nn, pc, 0, kb)
		}
	}
}

// packTGo packs rows p in [p0,p1) of a transposed panel: dst[p·nr+j] =
// B[j0+j, pc+p] for j < nn (converted to float32), zero for nn ≤ j < nr.
func packTGo(dst []float32, g *gemmArgs, j0, nn, pc, p0, p1 int) {
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
// [kb, nc]. Full tiles are written straight into C; edge tiles go through
// w.tmp and only their valid part is merged.
func (w *Worker) macro(g *gemmArgs, ic, mc, jc, nc, pc, kb int, direct bool) {
	first := pc == 0
	for jr := 0; jr < nc; jr += nr {
		nn := min(nr, nc-jr)
		bp := &w.bpack[jr/nr*kb*nr]
		var bias *float32
		if first && g.bias != nil && nn == nr {
			bias = &g.bias[jc+jr]
		}
		for ir := 0; ir < mc; ir += mr {
			mm := min(mr, mc-ir)
			ap, lda := &w.apack[ir*kcPad], kcPad
			if direct {
				if mm == mr {
					ap, lda = &g.a[(ic+ir)*g.lda+pc], g.lda
				} else {
					ap = &w.apack[0]
				}
			}
			ci := (ic+ir)*g.ldc + jc + jr
			if mm == mr && nn == nr {
				kernel(kb, ap, lda, bp, &g.c[ci], g.ldc, g.alpha, bias, !first)
				continue
			}
			kernel(kb, ap, lda, bp, &w.tmp[0], nr, g.alpha, nil, false)
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
	}
}
