package preprocess

// Block smoothing (libjpeg-turbo 2.1's jdcoefct.c decompress_smooth_data),
// on by default and so applied by Pillow: when a progressive JPEG ends
// before its first nine AC coefficients are fully refined (a file cut short
// by its writer, or a progression that never sends them), libjpeg estimates
// the missing low-frequency coefficients of each block from the DC values of
// the 5x5 blocks around it. Where no AC coefficient was ever sent it also
// re-estimates the DC (a Gaussian-like interpolation). Estimates only fill
// coefficients still zero, and never exceed what the unsent bits could hold.
// The neighbourhood at the image edges follows libjpeg's pointer logic
// exactly, quirks included, since that is what decides the output.

// smoothingOK is libjpeg's smoothing_ok: every component has a latched
// quantization table without zeros in the ten positions used, every DC is
// at least partly known, and some of the first nine AC coefficients are not
// exact.
func (d *jpegDecoder) smoothingOK() bool {
	if !d.progressive {
		return false
	}
	useful := false
	for i := range d.comps {
		c := &d.comps[i]
		if c.q == nil {
			return false
		}
		for _, p := range [...]int{0, 1, 8, 16, 9, 2, 3, 10, 17, 24} {
			if c.q[p] == 0 {
				return false
			}
		}
		if c.bits[0] < 0 {
			return false
		}
		for k := 1; k < 10; k++ {
			if c.bits[k] != 0 {
				useful = true
			}
		}
	}
	return useful
}

// smoothPred is one coefficient estimate: num over (q << 8), rounded, at
// most 2^al - 1 in magnitude when al > 0.
func smoothPred(num, q int64, al int) int16 {
	neg := num < 0
	if neg {
		num = -num
	}
	pred := ((q << 7) + num) / (q << 8)
	if al > 0 && pred >= 1<<al {
		pred = 1<<al - 1
	}
	if neg {
		pred = -pred
	}
	return int16(pred)
}

// smoothComponent runs the IDCT of component c with block smoothing.
func (d *jpegDecoder) smoothComponent(c *jpegComp) {
	lastRow := d.mcusY - 1
	stride := c.bw * 8
	q := c.q
	dcAt := func(r, col int) int64 { return int64(c.coef[(r*c.bw+col)*64]) }
	var ws [64]int16
	for r := 0; r < c.hib; r++ {
		imcu, br := r/c.v, r%c.v
		rows := c.v
		if imcu == lastRow {
			if rows = c.hib % c.v; rows == 0 {
				rows = c.v
			}
		}
		bits := &c.bits
		if imcu > d.lastGood {
			bits = &c.prevBits
		}
		changeDC := true
		for k := 1; k < 10; k++ {
			changeDC = changeDC && bits[k] == -1
		}
		// Block rows above and below, as libjpeg's pointers pick them.
		prev := r
		if br > 0 || imcu > 0 {
			prev = r - 1
		}
		prev2 := prev
		if br > 1 || imcu > 1 {
			prev2 = r - 2
		}
		next := r
		if br < rows-1 || imcu < lastRow {
			next = r + 1
		}
		next2 := next
		if br < rows-2 || imcu+1 < lastRow {
			next2 = r + 2
		}
		src := [5]int{prev2, prev, r, next, next2}
		var dc [5][5]int64 // [row][column], columns col-2..col+2
		for i, sr := range src {
			v := dcAt(sr, 0)
			dc[i] = [5]int64{v, v, v, v, v}
		}
		last := c.wib - 1
		Q00 := int64(q[0])
		for col := 0; col <= last; col++ {
			if col == 0 && col < last {
				for i, sr := range src {
					dc[i][3] = dcAt(sr, col+1)
				}
			}
			if col+1 < last {
				for i, sr := range src {
					dc[i][4] = dcAt(sr, col+2)
				}
			}
			off := (r*c.bw + col) * 64
			copy(ws[:], c.coef[off:off+64])
			smoothBlock(&ws, &dc, bits, q, Q00, changeDC)
			for k, v := range ws {
				d.blk[k] = int32(v) * q[k]
			}
			if d.scale > 1 {
				d.scaledIDCT(c, col, r) // jpegscale.go
			} else {
				idct(&d.blk, c.plane[r*8*stride+col*8:], stride)
			}
			for i := range dc {
				dc[i][0], dc[i][1], dc[i][2], dc[i][3] = dc[i][1], dc[i][2], dc[i][3], dc[i][4]
			}
		}
	}
}

// smoothBlock fills the estimates into one block; the DC names follow
// libjpeg's DC01..DC25, row by row.
func smoothBlock(ws *[64]int16, dc *[5][5]int64, bits *[10]int, q *[64]int32, Q00 int64, changeDC bool) {
	DC01, DC02, DC03, DC04, DC05 := dc[0][0], dc[0][1], dc[0][2], dc[0][3], dc[0][4]
	DC06, DC07, DC08, DC09, DC10 := dc[1][0], dc[1][1], dc[1][2], dc[1][3], dc[1][4]
	DC11, DC12, DC13, DC14, DC15 := dc[2][0], dc[2][1], dc[2][2], dc[2][3], dc[2][4]
	DC16, DC17, DC18, DC19, DC20 := dc[3][0], dc[3][1], dc[3][2], dc[3][3], dc[3][4]
	DC21, DC22, DC23, DC24, DC25 := dc[4][0], dc[4][1], dc[4][2], dc[4][3], dc[4][4]
	est := func(k, pos int, withDC, without int64) {
		if al := bits[k]; al != 0 && ws[pos] == 0 {
			n := without
			if changeDC {
				n = withDC
			}
			ws[pos] = smoothPred(Q00*n, int64(q[pos]), al)
		}
	}
	est(1, 1,
		-DC01-DC02+DC04+DC05-3*DC06+13*DC07-13*DC09+3*DC10-3*DC11+38*DC12-38*DC14+
			3*DC15-3*DC16+13*DC17-13*DC19+3*DC20-DC21-DC22+DC24+DC25,
		-7*DC11+50*DC12-50*DC14+7*DC15)
	est(2, 8,
		-DC01-3*DC02-3*DC03-3*DC04-DC05-DC06+13*DC07+38*DC08+13*DC09-DC10+DC16-
			13*DC17-38*DC18-13*DC19+DC20+DC21+3*DC22+3*DC23+3*DC24+DC25,
		-7*DC03+50*DC08-50*DC18+7*DC23)
	est(3, 16,
		DC03+2*DC07+7*DC08+2*DC09-5*DC12-14*DC13-5*DC14+2*DC17+7*DC18+2*DC19+DC23,
		-DC03+13*DC08-24*DC13+13*DC18-DC23)
	est(4, 9,
		-DC01+DC05+9*DC07-9*DC09-9*DC17+9*DC19+DC21-DC25,
		DC10+DC16-10*DC17+10*DC19-DC02-DC20+DC22-DC24+DC04-DC06+10*DC07-10*DC09)
	est(5, 2,
		2*DC07-5*DC08+2*DC09+DC11+7*DC12-14*DC13+7*DC14+DC15+2*DC17-5*DC18+2*DC19,
		-DC11+13*DC12-24*DC13+13*DC14-DC15)
	if !changeDC {
		return
	}
	est(6, 3, DC07-DC09+2*DC12-2*DC14+DC17-DC19, 0)
	est(7, 10, DC07-3*DC08+DC09-DC17+3*DC18-DC19, 0)
	est(8, 17, DC07-DC09-3*DC12+3*DC14+DC17-DC19, 0)
	est(9, 24, DC07+2*DC08+DC09-DC17-2*DC18-DC19, 0)
	num := Q00 * (-2*DC01 - 6*DC02 - 8*DC03 - 6*DC04 - 2*DC05 -
		6*DC06 + 6*DC07 + 42*DC08 + 6*DC09 - 6*DC10 -
		8*DC11 + 42*DC12 + 152*DC13 + 42*DC14 - 8*DC15 -
		6*DC16 + 6*DC17 + 42*DC18 + 6*DC19 - 6*DC20 -
		2*DC21 - 6*DC22 - 8*DC23 - 6*DC24 - 2*DC25)
	ws[0] = smoothPred(num, Q00, 0)
}
