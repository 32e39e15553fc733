package preprocess

import (
	"encoding/binary"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"image/png"
)

// iPhone HEICs are grids of 512x512 HEVC tiles. heif-enc 1.15 only writes
// one-tile grids (for odd sizes), so this test assembles a 2x2 grid from
// four single-image HEICs that heif-enc made, following ISO/IEC 23008-12
// (grid item, dimg references, idat payload), with an output size that
// crops the right and bottom tiles.

// heifPrimaryCoded returns the hvcC property box and the coded data of the
// primary item of a single-image HEIC.
func heifPrimaryCoded(t testing.TB, file []byte) (hvcC, coded []byte) {
	t.Helper()
	meta := bmffSplit(t, bmffMustFind(t, file, "meta")[4:])
	var primary uint32
	var ipco, ipma, iloc []byte
	for _, k := range meta {
		switch k.typ {
		case "pitm":
			primary = uint32(binary.BigEndian.Uint16(k.body[4:]))
		case "iprp":
			ipco, ipma = bmffMustFind(t, k.body, "ipco"), bmffMustFind(t, k.body, "ipma")
		case "iloc":
			iloc = k.body
		}
	}
	assoc := map[uint32][]int{}
	if err := parseIPMA(ipma, assoc); err != nil {
		t.Fatal(err)
	}
	props := bmffSplit(t, ipco)
	for _, i := range assoc[primary] {
		if props[i-1].typ == "hvcC" {
			hvcC = bmffBox("hvcC", props[i-1].body)
		}
	}
	// iloc version 0 or 1, construction method 0, base offset size 0.
	v, offSize, lenSize := iloc[0], int(iloc[4]>>4), int(iloc[4]&15)
	baseSize := int(iloc[5] >> 4)
	p := 8
	get := func(n int) uint64 {
		var x uint64
		for i := 0; i < n; i++ {
			x = x<<8 | uint64(iloc[p+i])
		}
		p += n
		return x
	}
	count := int(binary.BigEndian.Uint16(iloc[6:]))
	for k := 0; k < count; k++ {
		id := uint32(get(2))
		if v >= 1 {
			get(2)
		}
		get(2)
		base := get(baseSize)
		n := int(get(2))
		for e := 0; e < n; e++ {
			off, l := base+get(offSize), get(lenSize)
			if id == primary {
				coded = append(coded, file[off:off+l]...)
			}
		}
	}
	if hvcC == nil || coded == nil {
		t.Fatal("no hvcC or coded data for the primary item")
	}
	return hvcC, coded
}

func bmffMustFind(t testing.TB, d []byte, typ string) []byte {
	t.Helper()
	b, err := bmffFind(d, typ)
	if err != nil || b == nil {
		t.Fatalf("no %s box (%v)", typ, err)
	}
	return b
}

// buildGrid writes a HEIC whose primary item is a rows x cols grid of the
// given tiles (each hvcC box + coded data, all tw x th), outW x outH.
func buildGrid(tiles [][2][]byte, rows, cols, tw, th, outW, outH int) []byte {
	u16 := func(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
	u32 := func(v int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	full := func(typ string, body ...[]byte) []byte {
		return bmffBox(typ, append([][]byte{{0, 0, 0, 0}}, body...)...)
	}
	n := len(tiles)
	gridID := n + 1
	build := func(mdatStart int) []byte {
		var infes, ipco, ipma, iloc, refs []byte
		for i := 1; i <= n; i++ {
			// Flag 1: hidden, the tiles are not images of their own.
			infes = append(infes, bmffBox("infe", []byte{2, 0, 0, 1}, u16(i), u16(0), []byte("hvc1\x00"))...)
		}
		infes = append(infes, bmffBox("infe", []byte{2, 0, 0, 0}, u16(gridID), u16(0), []byte("grid\x00"))...)
		for _, tl := range tiles {
			ipco = append(ipco, tl[0]...)
		}
		ipco = append(ipco, full("ispe", u32(tw), u32(th))...)
		ipco = append(ipco, full("ispe", u32(outW), u32(outH))...)
		ipma = u32(n + 1)
		for i := 1; i <= n; i++ {
			ipma = append(ipma, u16(i)...)
			ipma = append(ipma, 2, byte(0x80|i), byte(n+1))
		}
		ipma = append(ipma, u16(gridID)...)
		ipma = append(ipma, 1, byte(n+2))
		refs = append(u16(gridID), u16(n)...)
		for i := 1; i <= n; i++ {
			refs = append(refs, u16(i)...)
		}
		// iloc version 1: offsets and lengths of 4 bytes, no base offset.
		iloc = append([]byte{1, 0, 0, 0, 0x44, 0}, u16(n+1)...)
		off := mdatStart + 8
		for i := 1; i <= n; i++ {
			iloc = append(iloc, u16(i)...)
			iloc = append(iloc, 0, 0, 0, 0) // construction method 0, data reference 0
			iloc = append(iloc, u16(1)...)
			iloc = append(iloc, u32(off)...)
			iloc = append(iloc, u32(len(tiles[i-1][1]))...)
			off += len(tiles[i-1][1])
		}
		iloc = append(iloc, u16(gridID)...)
		iloc = append(iloc, 0, 1, 0, 0) // construction method 1: idat
		iloc = append(iloc, u16(1)...)
		iloc = append(iloc, u32(0)...)
		iloc = append(iloc, u32(8)...)
		grid := []byte{0, 0, byte(rows - 1), byte(cols - 1)}
		grid = append(append(grid, u16(outW)...), u16(outH)...)
		meta := full("meta",
			full("hdlr", u32(0), []byte("pict"), make([]byte, 13)),
			bmffBox("pitm", []byte{0, 0, 0, 0}, u16(gridID)),
			full("iinf", u16(n+1), infes),
			full("iref", bmffBox("dimg", refs)),
			bmffBox("iprp", bmffBox("ipco", ipco), full("ipma", ipma)),
			bmffBox("iloc", iloc),
			bmffBox("idat", grid))
		var mdat []byte
		for _, tl := range tiles {
			mdat = append(mdat, tl[1]...)
		}
		ftyp := bmffBox("ftyp", []byte("heic\x00\x00\x00\x00mif1heic"))
		return append(append(ftyp, meta...), bmffBox("mdat", mdat)...)
	}
	first := build(0)
	return build(len(first) - len(bmffBox("mdat")) - gridCodedLen(tiles))
}

func gridCodedLen(tiles [][2][]byte) int {
	n := 0
	for _, tl := range tiles {
		n += len(tl[1])
	}
	return n
}

// heifGridTiles encodes the cols x rows tiles of 64x64 of one gradient
// picture with heif-enc (row by row): each tile's hvcC and coded data, and
// heif-convert's decode of each tile's file.
func heifGridTiles(t testing.TB, cols, rows int) (tiles [][2][]byte, tileRGB [][]byte) {
	t.Helper()
	enc := heifNeedTool(t, "heif-enc")
	dir := t.TempDir()
	const tw, th = 64, 64
	for i := 0; i < cols*rows; i++ {
		img := image.NewRGBA(image.Rect(0, 0, tw, th))
		for y := 0; y < th; y++ {
			for x := 0; x < tw; x++ {
				gx, gy := x+tw*(i%cols), y+th*(i/cols)
				img.Pix[(y*tw+x)*4], img.Pix[(y*tw+x)*4+1], img.Pix[(y*tw+x)*4+2], img.Pix[(y*tw+x)*4+3] =
					byte(gx*2), byte(gy*2), byte((gx*gy)>>4), 255
			}
		}
		src, out := filepath.Join(dir, "t.png"), filepath.Join(dir, "t.heic")
		f, err := os.Create(src)
		if err != nil {
			t.Fatal(err)
		}
		png.Encode(f, img)
		f.Close()
		if msg, err := exec.Command(enc, "-q", "80", src, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("heif-enc: %v\n%s", err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		info, err := parseHEIF(data)
		if err != nil || info.itemType != "hvc1" {
			t.Fatalf("tile %d: primary %+v, %v (want a single hvc1 image)", i, info, err)
		}
		hvcC, coded := heifPrimaryCoded(t, data)
		tiles = append(tiles, [2][]byte{hvcC, coded})
		rgb, _, _ := heifConvert(t, data, ".heic")
		tileRGB = append(tileRGB, rgb)
	}
	return tiles, tileRGB
}

// TestHEIFGrid decodes a 2x2 grid cropped to 120x100 and checks it against
// heif-convert's decode of the grid and of the four tiles alone.
func TestHEIFGrid(t *testing.T) {
	const tw, th = 64, 64
	tiles, tileRGB := heifGridTiles(t, 2, 2)
	grid := buildGrid(tiles, 2, 2, tw, th, 120, 100)
	info, err := parseHEIF(grid)
	if err != nil || info.itemType != "grid" || info.tiles != 4 || info.w != 120 || info.h != 100 {
		t.Fatalf("grid header %+v, %v", info, err)
	}
	got, w, h := heifDecodedRGB(t, grid, "grid.heic")
	want, ww, wh := heifConvert(t, grid, ".heic")
	if w != ww || h != wh {
		t.Fatalf("decoded %dx%d, heif-convert %dx%d", w, h, ww, wh)
	}
	heifCheckClose(t, got, want, heifTol{2, len(got) / 100})
	// Each tile in its place: the grid against heif-convert's decode of
	// the tile files alone.
	for k, tile := range tileRGB {
		var region, ref []byte
		for y := 0; y < th; y++ {
			for x := 0; x < tw; x++ {
				gx, gy := x+tw*(k%2), y+th*(k/2)
				if gx < w && gy < h {
					region = append(region, got[(gy*w+gx)*3:(gy*w+gx)*3+3]...)
					ref = append(ref, tile[(y*tw+x)*3:(y*tw+x)*3+3]...)
				}
			}
		}
		t.Logf("tile %d:", k)
		heifCheckClose(t, region, ref, heifTol{2, len(region) / 100})
	}
}
