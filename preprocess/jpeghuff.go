package preprocess

import (
	"encoding/binary"
	"errors"
)

// This file is the entropy decoding of JPEG scans: the bit reader, Huffman
// tables, and the baseline and progressive block decoders. It follows what
// libjpeg-turbo does with damaged data, because that is what Pillow shows:
// a marker met inside entropy data ends the segment, the block being decoded
// gets zero bits, and the rest of the segment's blocks stay zero (a flat
// mid-grey). Running out of file is an error, as it is for Pillow
// ("image file is truncated").

// errJPEGTruncated is returned when the entropy data ends before the image.
var errJPEGTruncated = errors.New("file is truncated")

// huffLookBits is the lookahead of the Huffman tables: 11 bits let most AC
// coefficients of a quality-90 photo (code and extra bits) decode in one
// lookup (9 bits measured 10-20% slower on BenchmarkJPEGVersusPillow).
const huffLookBits = 11

// huffTable is a decoded DHT table: a lookup on the next huffLookBits bits
// for short codes, canonical-code limits for the others.
type huffTable struct {
	lut     [1 << huffLookBits]uint16 // code length << 8 | symbol; 0: longer code
	maxcode [18]int32                 // largest code of each length, -1 if none
	valptr  [17]int32                 // index in vals of the first code of each length
	mincode [17]int32
	vals    [256]byte
	defined bool
	maxSym  byte // largest symbol, to refuse DC tables with sizes over 15
	// fastAC decodes a whole AC coefficient from the next huffLookBits
	// bits when its code and its extra bits fit there: value << 16 |
	// run << 8 | bits used; 0 when they do not.
	fastAC [1 << huffLookBits]int32
}

// build fills the table from the 16 code counts and the symbols of a DHT
// segment, refusing code sets that overflow as libjpeg does.
func (t *huffTable) build(counts *[16]byte, syms []byte) error {
	*t = huffTable{defined: true}
	copy(t.vals[:], syms)
	for _, s := range syms {
		t.maxSym = max(t.maxSym, s)
	}
	code, k := int32(0), int32(0)
	for l := 1; l <= 16; l++ {
		n := int32(counts[l-1])
		t.valptr[l] = k
		t.mincode[l] = code
		if n == 0 {
			t.maxcode[l] = -1
		} else {
			t.maxcode[l] = code + n - 1
			if code+n-1 >= 1<<l {
				return errors.New("bad Huffman table")
			}
			if l <= huffLookBits {
				for i := int32(0); i < n; i++ {
					c := code + i
					shift := huffLookBits - l
					e := uint16(l)<<8 | uint16(syms[k+i])
					for j := c << shift; j < (c+1)<<shift; j++ {
						t.lut[j] = e
					}
				}
			}
		}
		code = (code + n) << 1
		k += n
	}
	t.maxcode[17] = 0x7fffffff
	for i, e := range t.lut {
		l, rs := uint(e>>8), uint8(e)
		r, sz := uint(rs>>4), uint(rs&15)
		if l == 0 || sz == 0 || l+sz > huffLookBits {
			continue
		}
		v := int32(i>>(huffLookBits-l-sz)) & (1<<sz - 1)
		if v < 1<<(sz-1) {
			v += -1<<sz + 1
		}
		t.fastAC[i] = v<<16 | int32(r)<<8 | int32(l+sz)
	}
	return nil
}

// bitReader reads entropy-coded bits, removing the 0x00 stuffed after each
// 0xFF. At a marker or the end of the data it supplies zero bits and
// remembers how many, so that the decoder can tell whether it consumed any.
type bitReader struct {
	data  []byte
	pos   int    // next byte to read
	acc   uint64 // bits, most significant first
	n     uint   // valid bits in acc
	zeros uint   // the last zeros bits of acc are padding, not data
	stop  bool   // a marker or the end of data was reached
}

func (br *bitReader) reset(data []byte, pos int) {
	*br = bitReader{data: data, pos: pos}
}

// fill tops acc up to at least 57 bits.
func (br *bitReader) fill() {
	// Fast path: eight bytes without 0xFF are plain data.
	if !br.stop && br.pos+8 <= len(br.data) {
		v := binary.BigEndian.Uint64(br.data[br.pos:])
		if x := ^v; (x-0x0101010101010101)&^x&0x8080808080808080 == 0 {
			k := (64 - br.n) >> 3
			br.acc |= v >> br.n
			br.n += k * 8
			br.pos += int(k)
			br.acc &^= ^uint64(0) >> br.n
			return
		}
	}
	for br.n <= 56 {
		if !br.stop && br.pos < len(br.data) {
			b := br.data[br.pos]
			if b != 0xff {
				br.pos++
				br.acc |= uint64(b) << (56 - br.n)
				br.n += 8
				continue
			}
			// 0xFF: padding FFs, then 0x00 (a data 0xFF) or a marker.
			p := br.pos + 1
			for p < len(br.data) && br.data[p] == 0xff {
				p++
			}
			if p < len(br.data) && br.data[p] == 0 {
				br.pos = p + 1
				br.acc |= 0xff << (56 - br.n)
				br.n += 8
				continue
			}
			br.pos = p - 1 // at the last 0xFF before the marker byte
			if p >= len(br.data) {
				br.pos = len(br.data)
			}
		}
		br.stop = true
		br.n += 8
		br.zeros += 8
	}
}

// starved reports whether padding bits were consumed.
func (br *bitReader) starved() bool { return br.zeros > br.n }

// eof reports whether the reader stopped at the end of the data rather than
// at a marker.
func (br *bitReader) eof() bool { return br.stop && br.pos >= len(br.data) }

func (br *bitReader) bits(s uint) int32 {
	if br.n < s {
		br.fill()
	}
	v := int32(br.acc >> (64 - s))
	br.acc <<= s
	br.n -= s
	return v
}

func (br *bitReader) bit() bool {
	if br.n < 1 {
		br.fill()
	}
	v := br.acc>>63 != 0
	br.acc <<= 1
	br.n--
	return v
}

// receiveExtend reads s bits and sign-extends them as a JPEG magnitude
// category; s is 0..16.
func (br *bitReader) receiveExtend(s uint8) int32 {
	if s == 0 {
		return 0
	}
	if br.n < uint(s) {
		br.fill()
	}
	v := int32(br.acc >> (64 - uint(s)))
	br.acc <<= s
	br.n -= uint(s)
	if v < 1<<(s-1) {
		v += -1<<s + 1
	}
	return v
}

// decode reads one Huffman symbol. An invalid code gives symbol 0, as in
// libjpeg (which warns and carries on).
func (br *bitReader) decode(t *huffTable) uint8 {
	if br.n < 16 {
		br.fill()
	}
	if e := t.lut[br.acc>>(64-huffLookBits)]; e != 0 {
		l := uint(e >> 8)
		br.acc <<= l
		br.n -= l
		return uint8(e)
	}
	code := int32(br.acc >> (64 - huffLookBits - 1))
	l := huffLookBits + 1
	for ; l <= 16 && code > t.maxcode[l]; l++ {
		code = int32(br.acc >> (64 - uint(l) - 1))
	}
	br.acc <<= uint(l)
	br.n -= uint(l)
	if l > 16 {
		return 0
	}
	i := t.valptr[l] + code - t.mincode[l]
	return t.vals[i&0xff]
}

// zigzag maps the coded order to the natural (row-major) order, padded so
// that a corrupt run past the end lands on the last coefficient, as in
// libjpeg (and so that k&127 needs no bounds check).
var zigzag = [128]uint8{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
}

// decodeBaseline decodes one sequential block into blk, dequantized, in
// natural order; blk must be zero on entry. It returns false when the block
// has no AC coefficient. The bit buffer lives in locals here: this loop is
// most of the decoding time.
func (br *bitReader) decodeBaseline(blk *[64]int32, dc, ac *huffTable, q *[64]int32, pred *int32) bool {
	if br.n < 32 {
		br.fill()
	}
	s := br.decode(dc)
	*pred += br.receiveExtend(s)
	blk[0] = int32(int16(*pred)) * q[0]
	hasAC := false
	acc, n := br.acc, br.n
	for k := 1; k < 64; k++ {
		if n < 32 {
			br.acc, br.n = acc, n
			br.fill()
			acc, n = br.acc, br.n
		}
		if e := ac.fastAC[acc>>(64-huffLookBits)]; e != 0 {
			l := uint(e & 0xff)
			acc <<= l
			n -= l
			k += int(e>>8) & 15
			z := zigzag[k&127] & 63
			blk[z] = (e >> 16) * q[z]
			hasAC = true
			continue
		}
		var rs uint8
		if e := ac.lut[acc>>(64-huffLookBits)]; e != 0 {
			l := uint(e >> 8)
			acc <<= l
			n -= l
			rs = uint8(e)
		} else {
			br.acc, br.n = acc, n
			rs = br.decode(ac)
			acc, n = br.acc, br.n
		}
		r, s := int(rs>>4), uint(rs&15)
		if s == 0 {
			if r != 15 {
				break
			}
			k += 15
			continue
		}
		k += r
		v := int32(acc >> (64 - s))
		acc <<= s
		n -= s
		if v < 1<<(s-1) {
			v += -1<<s + 1
		}
		z := zigzag[k&127] & 63
		blk[z] = int32(int16(v)) * q[z]
		hasAC = true
	}
	br.acc, br.n = acc, n
	return hasAC
}

// The progressive decoders work on the coefficient buffer (int16, natural
// order, not dequantized), as jdphuff.c does.

func (br *bitReader) dcFirst(blk []int16, dc *huffTable, pred *int32, al uint) {
	s := br.decode(dc)
	*pred += br.receiveExtend(s)
	blk[0] = int16(*pred << al)
}

func (br *bitReader) dcRefine(blk []int16, al uint) {
	if br.bit() {
		blk[0] |= 1 << al
	}
}

func (br *bitReader) acFirst(blk []int16, ac *huffTable, ss, se int, al uint, eobrun *int32) {
	if *eobrun > 0 {
		*eobrun--
		return
	}
	for k := ss; k <= se; k++ {
		rs := br.decode(ac)
		r, s := int(rs>>4), rs&15
		if s != 0 {
			k += r
			blk[zigzag[k&127]] = int16(br.receiveExtend(s) << al)
			continue
		}
		if r == 15 {
			k += 15
			continue
		}
		*eobrun = 1 << r
		if r != 0 {
			*eobrun += br.bits(uint(r))
		}
		*eobrun--
		break
	}
}

func (br *bitReader) acRefine(blk []int16, ac *huffTable, ss, se int, al uint, eobrun *int32) {
	p1, m1 := int16(1)<<al, int16(-1)<<al
	refine := func(c *int16) {
		if br.bit() && *c&p1 == 0 {
			if *c >= 0 {
				*c += p1
			} else {
				*c += m1
			}
		}
	}
	k := ss
	if *eobrun == 0 {
		for ; k <= se; k++ {
			rs := br.decode(ac)
			r, s := int(rs>>4), int16(rs&15)
			if s != 0 {
				s = m1
				if br.bit() {
					s = p1
				}
			} else if r != 15 {
				*eobrun = 1 << r
				if r != 0 {
					*eobrun += br.bits(uint(r))
				}
				break
			}
			for ; k <= se; k++ {
				c := &blk[zigzag[k&127]]
				if *c != 0 {
					refine(c)
				} else {
					if r--; r < 0 {
						break
					}
				}
			}
			if s != 0 {
				blk[zigzag[k&127]] = s
			}
		}
	}
	if *eobrun > 0 {
		for ; k <= se; k++ {
			if c := &blk[zigzag[k&127]]; *c != 0 {
				refine(c)
			}
		}
		*eobrun--
	}
}

// restart moves past the RSTn marker that ends a restart interval,
// resynchronising as libjpeg's jpeg_resync_to_restart does when the
// expected marker is not there. It returns false when the decoder must treat
// the next segment as empty (the marker found was left for later).
func (d *jpegDecoder) restart(s *scanHeader, want int) (bool, error) {
	d.pos = d.br.pos
	if d.arith {
		d.pos = d.ae.pos
	}
	m, err := d.nextMarker()
	if err != nil {
		return false, errJPEGTruncated
	}
	for {
		var action int
		switch {
		case m < mSOF0:
			action = 2
		case m < mRST0 || m > mRST7:
			action = 3
		default:
			n := int(m - mRST0)
			switch n {
			case (want + 1) & 7, (want + 2) & 7:
				action = 3
			case (want - 1) & 7, (want - 2) & 7:
				action = 2
			default:
				action = 1
			}
		}
		switch action {
		case 1:
			d.resume(s, true)
			return true, nil
		case 2:
			if m, err = d.nextMarker(); err != nil {
				return false, errJPEGTruncated
			}
		default:
			d.pos -= 2 // leave the marker for the marker reader
			d.resume(s, false)
			return false, nil
		}
	}
}

// resume restarts entropy decoding at d.pos after a restart marker; when
// ok is false a marker is waiting there and the data is taken as empty.
func (d *jpegDecoder) resume(s *scanHeader, ok bool) {
	if d.arith {
		d.arithStart(s, d.pos)
		d.ae.marker = !ok
		return
	}
	d.br.reset(d.data, d.pos)
	d.br.stop = !ok
}
