package preprocess

import "errors"

// errRowOrder is a decode that gave rows out of the order turnResizer
// follows (from 0 up, again from 0): a fault of the decoder, not the file.
var errRowOrder = errors.New("internal error: decoded rows out of order")

// turnResizer resizes a decode whose rows are columns of the picture shown
// (EXIF orientation 5 to 8) as the rows come, without the turned image.
// The shown picture's horizontal pass runs across decoded rows: each
// decoded row is added, weighted, into the sums of the resized columns
// whose taps it falls under (vacc), and a column whose last row has come is
// rounded, laid out as a row and given the vertical pass (the shown
// picture's) with the horizontal pass's code, then written into the output
// window. The sums are the integers resizeCrop computes on the turned image,
// added in another order, so the result is the same to the bit
// (TestJPEGRowsOrientation). About two columns are open at a time.
type turnResizer struct {
	g              geometry
	o              int
	c0, c1, r0, r1 int // resized columns and rows kept (the window's)
	hp, vp         *pass
	in0, in1       int // shown rows the vertical pass reads
	cs0, cs1       int // the decoded columns they are
	// feed lists, for decoded row r, the columns c-c0 it is a tap of and
	// its weights: entries feedOff[r] to feedOff[r+1].
	feedOff      []int32
	feedC, feedW []int32
	last         []int // per column: the decoded row that completes it
	acc          [][]int32
	free         [][]int32
	next         int    // the decoded row expected next
	line         []byte // a column as a row of the vertical pass: g.h pixels
	col          []byte // its outputs r0..r1-1
	planar       *hpassPlanar
	packed       []uint64
	spare        []byte
	out          []byte // the output window, g.cw x g.ch
	err          error
}

// newTurnResizer prepares the resize of geometry g (the shown picture) of
// a w x h decode with orientation o (5 to 8), or returns nil when resizeCrop
// on the turned image must do it: no resize along one side, or nothing of
// the image in the window.
func newTurnResizer(g geometry, o, w, h int) *turnResizer {
	if o < 5 || o > 8 || g.rw == g.w || g.rh == g.h {
		return nil
	}
	t := &turnResizer{g: g, o: o}
	x0, x1 := max(0, -g.offX), min(g.cw, g.rw-g.offX) // the window's columns
	y0, y1 := max(0, -g.offY), min(g.ch, g.rh-g.offY) // and rows holding resized pixels
	if x0 >= x1 || y0 >= y1 {
		return nil
	}
	t.c0, t.c1 = x0+g.offX, x1+g.offX
	t.r0, t.r1 = y0+g.offY, y1+g.offY
	t.hp = newPass(g.w, g.rw, t.c0, t.c1)
	t.vp = newPass(g.h, g.rh, t.r0, t.r1)
	if t.hp.prec == 0 || t.vp.prec == 0 {
		return nil
	}
	t.in0, t.in1 = g.h, 0
	for y := t.r0; y < t.r1; y++ {
		start, ws := t.vp.taps(y)
		t.in0, t.in1 = min(t.in0, start), max(t.in1, start+len(ws))
	}
	if t.in0 >= t.in1 {
		return nil
	}
	t.cs0, t.cs1 = t.in0, t.in1 // shown row y is decoded column y (5, 6)
	if o == 7 || o == 8 {       // or w-1-y
		t.cs0, t.cs1 = w-t.in1, w-t.in0
	}
	// Shown column x is decoded row x (5, 8) or h-1-x (6, 7).
	rowOf := func(x int) int {
		if o == 6 || o == 7 {
			return h - 1 - x
		}
		return x
	}
	n := t.c1 - t.c0
	t.last = make([]int, n)
	count := make([]int32, h+1)
	for c := t.c0; c < t.c1; c++ {
		start, ws := t.hp.taps(c)
		t.last[c-t.c0] = max(rowOf(start), rowOf(start+len(ws)-1))
		for j := range ws {
			count[rowOf(start+j)+1]++
		}
	}
	for r := range h {
		count[r+1] += count[r]
	}
	t.feedOff = count
	t.feedC = make([]int32, count[h])
	t.feedW = make([]int32, count[h])
	fill := make([]int32, h)
	copy(fill, count[:h])
	for c := t.c0; c < t.c1; c++ {
		start, ws := t.hp.taps(c)
		for j, q := range ws {
			r := rowOf(start + j)
			t.feedC[fill[r]], t.feedW[fill[r]] = int32(c-t.c0), q
			fill[r]++
		}
	}
	t.acc = make([][]int32, n)
	t.line = make([]byte, g.h*3)
	t.col = make([]byte, (t.r1-t.r0)*3)
	if hpassSIMD && !hpassScalar {
		t.planar = newHpassPlanar(t.vp, g.h)
	} else {
		t.packed = make([]uint64, 3*g.h)
		t.spare = make([]byte, len(t.col))
	}
	t.out = make([]byte, g.cw*g.ch*3)
	return t
}

// row takes decoded row y. Rows come in order from 0; a decode that gives
// them again starts from 0 again (a later scan), and the columns are summed
// afresh.
func (t *turnResizer) row(y int, rgb []byte) {
	if y != t.next {
		if y != 0 {
			t.err = errRowOrder
			return
		}
		for i, a := range t.acc {
			if a != nil {
				t.free, t.acc[i] = append(t.free, a), nil
			}
		}
	}
	t.next = y + 1
	src := rgb[t.cs0*3 : t.cs1*3]
	for i := t.feedOff[y]; i < t.feedOff[y+1]; i++ {
		c := t.feedC[i]
		a := t.acc[c]
		if a == nil {
			a = t.open()
			t.acc[c] = a
		}
		vacc(a, src, t.feedW[i])
		if t.last[c] == y {
			t.close(int(c))
		}
	}
}

// open returns a column's sums set to the rounding term.
func (t *turnResizer) open() []int32 {
	var a []int32
	if k := len(t.free); k > 0 {
		a, t.free = t.free[k-1], t.free[:k-1]
	} else {
		a = make([]int32, (t.cs1-t.cs0)*3)
	}
	half := int32(1) << (t.hp.prec - 1)
	for i := range a {
		a[i] = half
	}
	return a
}

// close rounds column c-c0's sums into a row of the shown column, runs the
// vertical pass on it and writes the column into the window.
func (t *turnResizer) close(c int) {
	a := t.acc[c]
	t.acc[c], t.free = nil, append(t.free, a)
	prec := t.hp.prec
	line := t.line[t.in0*3 : t.in1*3]
	if t.o == 5 || t.o == 6 { // shown row y is decoded column y
		for i, v := range a {
			line[i] = clamp8(v, prec)
		}
	} else { // w-1-y: the row reversed, pixel by pixel
		n := t.in1 - t.in0
		for p := range n {
			d, s := line[p*3:p*3+3:p*3+3], a[(n-1-p)*3:(n-p)*3:(n-p)*3]
			d[0], d[1], d[2] = clamp8(s[0], prec), clamp8(s[1], prec), clamp8(s[2], prec)
		}
	}
	if t.planar != nil {
		t.planar.row(t.col, t.line)
	} else {
		hpassRows(t.col, t.spare, t.line, t.line, t.vp, t.r0, t.r1, t.packed)
	}
	x := c + t.c0 - t.g.offX
	for r := t.r0; r < t.r1; r++ {
		o := ((r-t.g.offY)*t.g.cw + x) * 3
		copy(t.out[o:o+3], t.col[(r-t.r0)*3:])
	}
}

// finish writes the output window into dst (g.cw x g.ch packed RGB).
// Columns still open (rows the decode never gave) are closed with what
// they have.
func (t *turnResizer) finish(dst []byte) error {
	if t.err != nil {
		return t.err
	}
	for c, a := range t.acc {
		if a != nil {
			t.close(c)
		}
	}
	copy(dst, t.out)
	return nil
}

// vacc does acc[i] += int32(src[i]) * w over len(acc) values.
func vacc(acc []int32, src []byte, w int32) {
	n := len(acc)
	src = src[:n]
	i := 0
	if hpassSIMD && !hpassScalar && n >= 16 {
		i = n &^ 15
		vaccAVX2(&acc[0], &src[0], i, w)
	}
	for ; i < n; i++ {
		acc[i] += int32(src[i]) * w
	}
}
