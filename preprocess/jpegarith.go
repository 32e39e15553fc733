package preprocess

import (
	"errors"
	"fmt"
)

// Arithmetic-coded JPEG (SOF9 sequential, SOF10 progressive), which Pillow's
// libjpeg-turbo decodes: the QM-coder of ITU T.81 Annex D with the
// statistics models of sections F.1.4 and G.1.3, decoded as libjpeg-turbo's
// jdarith.c does. Unlike Huffman data, a marker met inside the data is not
// the end of the segment's image: the decoder goes on with zero bytes, and
// a decoding error (a magnitude or a run that cannot be) leaves the rest of
// the segment's blocks untouched.

// qmState is a row of T.81 table D.2 (plus libjpeg's fixed-probability
// state 113): the LPS probability estimate, the next state after an LPS and
// after an MPS, and whether an LPS flips the MPS sense.
type qmState struct {
	qe         uint16
	nlps, nmps uint8
	switchMPS  uint8
}

var qmStates = [114]qmState{
	{0x5a1d, 1, 1, 1}, {0x2586, 14, 2, 0}, {0x1114, 16, 3, 0}, {0x080b, 18, 4, 0},
	{0x03d8, 20, 5, 0}, {0x01da, 23, 6, 0}, {0x00e5, 25, 7, 0}, {0x006f, 28, 8, 0},
	{0x0036, 30, 9, 0}, {0x001a, 33, 10, 0}, {0x000d, 35, 11, 0}, {0x0006, 9, 12, 0},
	{0x0003, 10, 13, 0}, {0x0001, 12, 13, 0}, {0x5a7f, 15, 15, 1}, {0x3f25, 36, 16, 0},
	{0x2cf2, 38, 17, 0}, {0x207c, 39, 18, 0}, {0x17b9, 40, 19, 0}, {0x1182, 42, 20, 0},
	{0x0cef, 43, 21, 0}, {0x09a1, 45, 22, 0}, {0x072f, 46, 23, 0}, {0x055c, 48, 24, 0},
	{0x0406, 49, 25, 0}, {0x0303, 51, 26, 0}, {0x0240, 52, 27, 0}, {0x01b1, 54, 28, 0},
	{0x0144, 56, 29, 0}, {0x00f5, 57, 30, 0}, {0x00b7, 59, 31, 0}, {0x008a, 60, 32, 0},
	{0x0068, 62, 33, 0}, {0x004e, 63, 34, 0}, {0x003b, 32, 35, 0}, {0x002c, 33, 9, 0},
	{0x5ae1, 37, 37, 1}, {0x484c, 64, 38, 0}, {0x3a0d, 65, 39, 0}, {0x2ef1, 67, 40, 0},
	{0x261f, 68, 41, 0}, {0x1f33, 69, 42, 0}, {0x19a8, 70, 43, 0}, {0x1518, 72, 44, 0},
	{0x1177, 73, 45, 0}, {0x0e74, 74, 46, 0}, {0x0bfb, 75, 47, 0}, {0x09f8, 77, 48, 0},
	{0x0861, 78, 49, 0}, {0x0706, 79, 50, 0}, {0x05cd, 48, 51, 0}, {0x04de, 50, 52, 0},
	{0x040f, 50, 53, 0}, {0x0363, 51, 54, 0}, {0x02d4, 52, 55, 0}, {0x025c, 53, 56, 0},
	{0x01f8, 54, 57, 0}, {0x01a4, 55, 58, 0}, {0x0160, 56, 59, 0}, {0x0125, 57, 60, 0},
	{0x00f6, 58, 61, 0}, {0x00cb, 59, 62, 0}, {0x00ab, 61, 63, 0}, {0x008f, 61, 32, 0},
	{0x5b12, 65, 65, 1}, {0x4d04, 80, 66, 0}, {0x412c, 81, 67, 0}, {0x37d8, 82, 68, 0},
	{0x2fe8, 83, 69, 0}, {0x293c, 84, 70, 0}, {0x2379, 86, 71, 0}, {0x1edf, 87, 72, 0},
	{0x1aa9, 87, 73, 0}, {0x174e, 72, 74, 0}, {0x1424, 72, 75, 0}, {0x119c, 74, 76, 0},
	{0x0f6b, 74, 77, 0}, {0x0d51, 75, 78, 0}, {0x0bb6, 77, 79, 0}, {0x0a40, 77, 48, 0},
	{0x5832, 80, 81, 1}, {0x4d1c, 88, 82, 0}, {0x438e, 89, 83, 0}, {0x3bdd, 90, 84, 0},
	{0x34ee, 91, 85, 0}, {0x2eae, 92, 86, 0}, {0x299a, 93, 87, 0}, {0x2516, 86, 71, 0},
	{0x5570, 88, 89, 1}, {0x4ca9, 95, 90, 0}, {0x44d9, 96, 91, 0}, {0x3e22, 97, 92, 0},
	{0x3824, 99, 93, 0}, {0x32b4, 99, 94, 0}, {0x2e17, 93, 86, 0}, {0x56a8, 95, 96, 1},
	{0x4f46, 101, 97, 0}, {0x47e5, 102, 98, 0}, {0x41cf, 103, 99, 0}, {0x3c3d, 104, 100, 0},
	{0x375e, 99, 93, 0}, {0x5231, 105, 102, 0}, {0x4c0f, 106, 103, 0}, {0x4639, 107, 104, 0},
	{0x415e, 103, 99, 0}, {0x5627, 105, 106, 1}, {0x50e7, 108, 107, 0}, {0x4b85, 109, 103, 0},
	{0x5597, 110, 109, 0}, {0x504f, 111, 107, 0}, {0x5a10, 110, 111, 1}, {0x5522, 112, 109, 0},
	{0x59eb, 112, 111, 1}, {0x5a1d, 113, 113, 0}}

// arithDecoder is the QM-decoder's state for one scan.
type arithDecoder struct {
	data   []byte
	pos    int
	marker bool // a marker was met: zeros from now on
	eof    bool
	c, a   int64
	ct     int
	dc     [16][64]byte  // DC statistics bins per table
	ac     [16][256]byte // AC statistics bins per table
	fixed  byte          // the fixed 0.5-probability bin
	dcL    [16]int       // DAC conditioning: DC lower and upper bounds,
	dcU    [16]int       // AC split point
	acK    [16]int
}

// reset restarts decoding at pos (start of scan or after RSTn).
func (e *arithDecoder) reset(data []byte, pos int) {
	e.data, e.pos, e.marker, e.eof = data, pos, false, false
	e.c, e.a, e.ct = 0, 0, -16 // reads two bytes into C first
	e.fixed = 113
}

// byte reads the next data byte, undoing 0xFF 0x00 stuffing; at a marker it
// stops and gives zeros.
func (e *arithDecoder) byte() int64 {
	if e.marker {
		return 0
	}
	if e.pos >= len(e.data) {
		e.eof, e.marker = true, true
		return 0
	}
	b := e.data[e.pos]
	e.pos++
	if b != 0xff {
		return int64(b)
	}
	for e.pos < len(e.data) && e.data[e.pos] == 0xff {
		e.pos++
	}
	if e.pos >= len(e.data) {
		e.eof, e.marker = true, true
		return 0
	}
	if e.data[e.pos] == 0 {
		e.pos++
		return 0xff
	}
	e.pos-- // leave the 0xFF before the marker code for the marker reader
	e.marker = true
	return 0
}

// decode decodes one binary decision with the statistics bin st.
func (e *arithDecoder) decode(st *byte) int {
	for e.a < 0x8000 {
		e.ct--
		if e.ct < 0 {
			e.c = e.c<<8 | e.byte()
			e.ct += 8
			if e.ct < 0 {
				e.ct++
				if e.ct == 0 {
					e.a = 0x8000 // becomes 0x10000 below
				}
			}
		}
		e.a <<= 1
	}
	sv := *st
	s := &qmStates[sv&0x7f]
	qe := int64(s.qe)
	nl := s.nlps | s.switchMPS<<7
	nm := s.nmps
	e.a -= qe
	temp := e.a << uint(e.ct)
	switch {
	case e.c >= temp:
		e.c -= temp
		if e.a < qe {
			e.a = qe
			*st = sv&0x80 ^ nm
		} else {
			e.a = qe
			*st = sv&0x80 ^ nl
			sv ^= 0x80
		}
	case e.a < 0x8000:
		if e.a < qe {
			*st = sv&0x80 ^ nl
			sv ^= 0x80
		} else {
			*st = sv&0x80 ^ nm
		}
	}
	return int(sv >> 7)
}

// dcDiff decodes a DC difference (F.1.4.1) and updates the component's
// context; ok is false on a magnitude overflow.
func (e *arithDecoder) dcDiff(tbl int, ctx *int) (int, bool) {
	st := e.dc[tbl][*ctx:]
	if e.decode(&st[0]) == 0 {
		*ctx = 0
		return 0, true
	}
	sign := e.decode(&st[1])
	bins := e.dc[tbl][:]
	i := *ctx + 2 + sign
	m := e.decode(&bins[i])
	if m != 0 {
		i = 20
		for e.decode(&bins[i]) != 0 {
			if m <<= 1; m == 0x8000 {
				return 0, false
			}
			i++
		}
	}
	switch {
	case m < (1<<e.dcL[tbl])>>1:
		*ctx = 0
	case m > (1<<e.dcU[tbl])>>1:
		*ctx = 12 + sign*4
	default:
		*ctx = 4 + sign*4
	}
	return e.magnitude(bins, i+14, m, sign), true
}

// magnitude reads the bits of a magnitude below its top bit m from bins[i]
// (F.1.4.1 and F.1.4.4.1.2 share this tail) and returns the signed value.
func (e *arithDecoder) magnitude(bins []byte, i, m, sign int) int {
	v := m
	for m >>= 1; m != 0; m >>= 1 {
		if e.decode(&bins[i]) != 0 {
			v |= m
		}
	}
	v++
	if sign != 0 {
		v = -v
	}
	return v
}

// acValue decodes the sign and magnitude of a nonzero AC coefficient at
// band position k whose bins start at base (F.1.4.4.1.2); ok is false on a
// magnitude overflow.
func (e *arithDecoder) acValue(tbl, k, base int) (int, bool) {
	bins := e.ac[tbl][:]
	sign := e.decode(&e.fixed)
	i := base + 2
	m := e.decode(&bins[i])
	if m != 0 && e.decode(&bins[i]) != 0 {
		m <<= 1
		i = 217
		if k <= e.acK[tbl] {
			i = 189
		}
		for e.decode(&bins[i]) != 0 {
			if m <<= 1; m == 0x8000 {
				return 0, false
			}
			i++
		}
	}
	return e.magnitude(bins, i+14, m, sign), true
}

// acBand decodes coefficients ss..se of a block (sequential, or a first
// progressive AC scan with shift al) into set; ok is false on an error.
func (e *arithDecoder) acBand(tbl, ss, se int, set func(k, v int)) bool {
	bins := e.ac[tbl][:]
	for k := ss; k <= se; k++ {
		base := 3 * (k - 1)
		if e.decode(&bins[base]) != 0 {
			break // EOB
		}
		for e.decode(&bins[base+1]) == 0 {
			base += 3
			if k++; k > se {
				return false
			}
		}
		v, ok := e.acValue(tbl, k, base)
		if !ok {
			return false
		}
		set(k, v)
	}
	return true
}

// acRefine is a progressive AC refinement scan's block (G.1.3.3).
func (e *arithDecoder) acRefine(blk []int16, tbl, ss, se int, al uint) bool {
	bins := e.ac[tbl][:]
	p1, m1 := int16(1)<<al, int16(-1)<<al
	kex := se
	for ; kex > 0; kex-- {
		if blk[zigzag[kex&127]] != 0 {
			break
		}
	}
	for k := ss; k <= se; k++ {
		base := 3 * (k - 1)
		if k > kex && e.decode(&bins[base]) != 0 {
			break
		}
		for {
			c := &blk[zigzag[k&127]]
			if *c != 0 {
				if e.decode(&bins[base+2]) != 0 {
					if *c < 0 {
						*c += m1
					} else {
						*c += p1
					}
				}
				break
			}
			if e.decode(&bins[base+1]) != 0 {
				*c = p1
				if e.decode(&e.fixed) != 0 {
					*c = m1
				}
				break
			}
			base += 3
			if k++; k > se {
				return false
			}
		}
	}
	return true
}

// arithStart resets the statistics the scan uses and starts decoding at
// pos, at the start of a scan and after each restart marker.
func (d *jpegDecoder) arithStart(s *scanHeader, pos int) {
	for _, c := range s.comps {
		if !d.progressive || s.ss == 0 && s.ah == 0 {
			d.ae.dc[c.td] = [64]byte{}
			c.pred, c.dcCtx = 0, 0
		}
		if !d.progressive || s.ss != 0 {
			d.ae.ac[c.ta] = [256]byte{}
		}
	}
	d.ae.reset(d.data, pos)
	d.aeFailed = false
}

// arithBlock decodes one block of an arithmetic-coded scan.
func (d *jpegDecoder) arithBlock(s *scanHeader, c *jpegComp, bx, by int) {
	e := &d.ae
	if !d.progressive {
		if d.aeFailed {
			d.greyBlock(c, bx, by)
			return
		}
		blk := &d.blk
		q := c.q
		if v, ok := e.dcDiff(c.td, &c.dcCtx); !ok {
			d.aeFailed = true
		} else {
			c.pred = (c.pred + int32(v)) & 0xffff
			blk[0] = int32(int16(c.pred)) * q[0]
			d.aeFailed = !e.acBand(c.ta, 1, 63, func(k, v int) {
				z := zigzag[k&127] & 63
				blk[z] = int32(int16(v)) * q[z]
			})
		}
		if d.scale > 1 {
			d.scaledIDCT(c, bx, by) // jpegscale.go
		} else {
			stride := c.bw * 8
			idct(blk, c.plane[by*8*stride+bx*8:], stride)
		}
		d.blk = [64]int32{}
		return
	}
	off := (by*c.bw + bx) * 64
	blk := c.coef[off : off+64 : off+64]
	switch {
	case s.ss == 0 && s.ah != 0: // DC refinement goes on after an error, as in libjpeg
		if e.decode(&e.fixed) != 0 {
			blk[0] |= 1 << s.al
		}
	case d.aeFailed:
	case s.ss == 0:
		v, ok := e.dcDiff(c.td, &c.dcCtx)
		if !ok {
			d.aeFailed = true
			return
		}
		c.pred = (c.pred + int32(v)) & 0xffff
		blk[0] = int16(c.pred << s.al)
	case s.ah == 0:
		d.aeFailed = !e.acBand(c.ta, s.ss, s.se, func(k, v int) {
			blk[zigzag[k&127]] = int16(uint32(v) << s.al)
		})
	default:
		d.aeFailed = !e.acRefine(blk, c.ta, s.ss, s.se, s.al)
	}
}

// dac reads arithmetic conditioning (T.81 B.2.4.3).
func (d *jpegDecoder) dac() error {
	seg, err := d.segment(mDAC)
	if err != nil {
		return err
	}
	if len(seg)%2 != 0 {
		return errors.New("bad DAC length")
	}
	for ; len(seg) > 0; seg = seg[2:] {
		i, v := int(seg[0]), int(seg[1])
		switch {
		case i < 16: // Tc = 0, a DC table
			d.ae.dcL[i], d.ae.dcU[i] = v&15, v>>4
			if d.ae.dcL[i] > d.ae.dcU[i] {
				return fmt.Errorf("bad DAC value 0x%02x", v)
			}
		case i < 32:
			d.ae.acK[i-16] = v
		default:
			return fmt.Errorf("bad DAC table %d", i)
		}
	}
	return nil
}
