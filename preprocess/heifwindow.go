package preprocess

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"sync/atomic"
)

// This file gives libheif the same saving hevcJob.window gives ffmpeg: for
// a reader of part of a grid image (the model's input), libheif is handed
// a copy of the file whose grid holds only the tiles that part meets, and
// the smaller image it decodes is put back at its place. HEVC tiles are
// decoded independently and heifPlanesFile's GBR path converts pixel by
// pixel, so those pixels are the ones the whole grid gives
// (TestHEIFBuiltinWindow). The copy is edited in place, nothing in it
// moves: the grid descriptor's rows, columns and output size, the grid's
// ispe, and its dimg reference box, which keeps its size by ending early
// and handing its last bytes to a reference box of a type no reader knows.

// heifSubGrids counts the decodes made through a smaller grid (tests).
var heifSubGrids atomic.Int64

// subGrid is where, in a HEIC, the fields that say which tiles a grid
// holds are, and what they say.
type subGrid struct {
	rows, cols   int
	outW, outH   int
	tileW, tileH int
	desc         int      // offset of the grid descriptor in the file
	wide         bool     // 32-bit output size fields
	ispe         int      // offset of the grid's ispe body
	dimg         int      // offset of its dimg reference box (header included)
	tiles        []uint32 // the dimg references, row by row
}

// heifSubGridFile returns a copy of data whose primary grid holds only the
// tiles meeting win (output coordinates, before irot/imir), and where the
// decoded smaller image goes in the whole one; ok false when the file does
// not allow it or there would be nothing to gain.
func heifSubGridFile(data []byte, info *heifInfo, win image.Rectangle) (out []byte, at image.Point, ok bool) {
	g, ok := findSubGrid(data, info)
	if !ok || win.Empty() {
		return nil, image.Point{}, false
	}
	c0, c1 := win.Min.X/g.tileW, min(g.cols, (win.Max.X+g.tileW-1)/g.tileW)
	r0, r1 := win.Min.Y/g.tileH, min(g.rows, (win.Max.Y+g.tileH-1)/g.tileH)
	n, k := len(g.tiles), (c1-c0)*(r1-r0)
	// The dimg box (16-bit ids) gives up 2 bytes a tile left out; the box
	// that takes them needs 12 (header, from, count) and an even rest.
	if c0 < 0 || r0 < 0 || c1 <= c0 || r1 <= r0 || n-k < 6 {
		return nil, image.Point{}, false
	}
	d := bytes.Clone(data)
	w, h := min(g.outW, c1*g.tileW)-c0*g.tileW, min(g.outH, r1*g.tileH)-r0*g.tileH
	d[g.desc+2], d[g.desc+3] = byte(r1-r0-1), byte(c1-c0-1)
	if g.wide {
		binary.BigEndian.PutUint32(d[g.desc+4:], uint32(w))
		binary.BigEndian.PutUint32(d[g.desc+8:], uint32(h))
	} else {
		binary.BigEndian.PutUint16(d[g.desc+4:], uint16(w))
		binary.BigEndian.PutUint16(d[g.desc+6:], uint16(h))
	}
	binary.BigEndian.PutUint32(d[g.ispe+4:], uint32(w))
	binary.BigEndian.PutUint32(d[g.ispe+8:], uint32(h))
	// dimg: header (8), from (2), count (2), k ids; then a box of type
	// "xdmg" from the same item over the tiles left out, filling the rest.
	p := g.dimg
	binary.BigEndian.PutUint32(d[p:], uint32(12+2*k))
	binary.BigEndian.PutUint16(d[p+10:], uint16(k))
	q := p + 12
	var left []uint32
	for i, id := range g.tiles {
		if r, c := i/g.cols, i%g.cols; r >= r0 && r < r1 && c >= c0 && c < c1 {
			binary.BigEndian.PutUint16(d[q:], uint16(id))
			q += 2
		} else {
			left = append(left, id)
		}
	}
	from := binary.BigEndian.Uint16(data[p+8:])
	binary.BigEndian.PutUint32(d[q:], uint32(2*(n-k)))
	copy(d[q+4:], "xdmg")
	binary.BigEndian.PutUint16(d[q+8:], from)
	binary.BigEndian.PutUint16(d[q+10:], uint16(n-k-6))
	for i, id := range left[:n-k-6] {
		binary.BigEndian.PutUint16(d[q+12+2*i:], uint16(id))
	}
	return d, image.Pt(c0*g.tileW, r0*g.tileH), true
}

// findSubGrid reads where data's primary grid (described by info, its
// header) says which tiles it holds;
// false unless the primary item is a grid of HEVC tiles whose descriptor
// is one extent of this file, whose ispe is its own, and whose dimg box
// has 16-bit ids.
func findSubGrid(data []byte, info *heifInfo) (subGrid, bool) {
	var g subGrid
	if info.itemType != "grid" || info.tileType != "hvc1" || info.hasClap || info.tileW <= 0 || info.tileH <= 0 {
		return g, false
	}
	g.tileW, g.tileH = info.tileW, info.tileH
	it, ok := readHEIFItems(data)
	if !ok || it.wideIDs || len(it.iref) < 4 || it.iref[0] != 0 {
		return g, false
	}
	at := func(b []byte) int { return cap(data) - cap(b) } // b is a sub-slice of data
	primary, iref := it.primary, it.iref
	// The descriptor: one extent, in the file or in idat.
	locs, ok := ilocItems(it.iloc)
	l, found := locs[primary]
	if !ok || !found || len(l.extents) != 1 {
		return g, false
	}
	desc, ok := l.bytes(data, it.idat)
	if !ok {
		return g, false
	}
	if g.rows, g.cols, g.outW, g.outH, ok = parseGridDesc(desc); !ok {
		return g, false
	}
	g.desc, g.wide = at(desc), desc[1]&1 != 0
	// The grid's ispe, a property no other item has.
	props, types := it.props, it.types
	ispe := 0
	for _, i := range it.assoc[primary] {
		if i >= 1 && i <= len(props) && types[i-1] == "ispe" {
			if ispe != 0 || len(props[i-1]) < 12 {
				return g, false
			}
			ispe = i
		}
	}
	for id, list := range it.assoc {
		for _, i := range list {
			if id != primary && i == ispe {
				return g, false
			}
		}
	}
	if ispe == 0 || int(binary.BigEndian.Uint32(props[ispe-1][4:])) != g.outW || int(binary.BigEndian.Uint32(props[ispe-1][8:])) != g.outH {
		return g, false
	}
	g.ispe = at(props[ispe-1])
	// The one dimg box of the primary item.
	g.dimg = -1
	if bmffBoxes(iref[4:], func(t string, r []byte) error {
		if t != "dimg" || len(r) < 4 || uint32(binary.BigEndian.Uint16(r)) != primary {
			return nil
		}
		n := int(binary.BigEndian.Uint16(r[2:]))
		if g.dimg != -1 || len(r) != 4+2*n || binary.BigEndian.Uint32(data[at(r)-8:]) != uint32(len(r)+8) {
			g.dimg = -2
			return nil
		}
		g.dimg = at(r) - 8
		for j := 0; j < n; j++ {
			g.tiles = append(g.tiles, uint32(binary.BigEndian.Uint16(r[4+2*j:])))
		}
		return nil
	}) != nil || g.dimg < 0 || len(g.tiles) != g.rows*g.cols {
		return g, false
	}
	return g, true
}

// heifDecodeSubGrid decodes data's primary grid with libheif through
// heifSubGridFile: the whole image, before irot/imir, with only the
// pixels in win (output coordinates) defined; ok false when the file does
// not allow it, or the smaller grid does not decode as expected (the
// caller then decodes the whole grid).
func heifDecodeSubGrid(ctx context.Context, data []byte, info *heifInfo, win image.Rectangle) (img *packedRGB, ok bool) {
	d, at, ok := heifSubGridFile(data, info, win)
	if !ok {
		return nil, false
	}
	sub, gbr, err := heifDecodeCoded(ctx, d, info)
	m, isRGB := sub.(*packedRGB)
	if err != nil || !gbr || !isRGB || at.X+m.W > info.w || at.Y+m.H > info.h {
		return nil, false
	}
	out := &packedRGB{Pix: rgbOutput(info.w * info.h * 3), W: info.w, H: info.h}
	for y := 0; y < m.H; y++ {
		copy(out.Pix[((at.Y+y)*info.w+at.X)*3:], m.Pix[y*m.W*3:(y+1)*m.W*3])
	}
	releaseDecoded(m)
	heifSubGrids.Add(1)
	return out, true
}
