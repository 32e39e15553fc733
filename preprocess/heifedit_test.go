package preprocess

import (
	"encoding/binary"
	"testing"

	"github.com/clipidx/clipidx/internal/video/videotest"
)

// This file edits HEIF files for tests: it adds item properties (colr,
// irot, imir) and rewrites ispe, keeping the file valid (box sizes and iloc
// offsets into mdat follow). heif-enc 1.15 writes neither colr nor irot.

type rawBox struct {
	typ  string
	body []byte
}

func bmffSplit(t testing.TB, d []byte) []rawBox {
	t.Helper()
	var out []rawBox
	if err := bmffBoxes(d, func(typ string, body []byte) error {
		out = append(out, rawBox{typ, body})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// bmffBox is an ISO BMFF box: 4-byte size, type, body.
func bmffBox(typ string, body ...[]byte) []byte { return videotest.QTBox(typ, body...) }

func bmffJoin(bs []rawBox) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, bmffBox(b.typ, b.body)...)
	}
	return out
}

// nclxBox is a colr property of colour type nclx.
func nclxBox(primaries, transfer, matrix uint16, full bool) []byte {
	b := []byte("nclx")
	b = binary.BigEndian.AppendUint16(b, primaries)
	b = binary.BigEndian.AppendUint16(b, transfer)
	b = binary.BigEndian.AppendUint16(b, matrix)
	f := byte(0)
	if full {
		f = 0x80
	}
	return bmffBox("colr", append(b, f))
}

func irotBox(quarterTurns byte) []byte { return bmffBox("irot", []byte{quarterTurns}) }
func imirBox(axis byte) []byte         { return bmffBox("imir", []byte{axis}) }

// heifAddProps appends props to ipco and associates them, in order, with
// the primary item (and, if tilesToo, with every other item too).
func heifAddProps(t testing.TB, file []byte, tilesToo bool, props ...[]byte) []byte {
	t.Helper()
	top := bmffSplit(t, file)
	metaAt := -1
	for i, b := range top {
		if b.typ == "meta" {
			metaAt = i
		}
	}
	if metaAt < 0 {
		t.Fatal("no meta box")
	}
	meta := top[metaAt].body
	kids := bmffSplit(t, meta[4:])
	var primary uint32
	for _, k := range kids {
		if k.typ == "pitm" {
			primary = uint32(binary.BigEndian.Uint16(k.body[4:]))
		}
	}
	for i, k := range kids {
		if k.typ != "iprp" {
			continue
		}
		pk := bmffSplit(t, k.body)
		var nprops int
		for j, p := range pk {
			if p.typ == "ipco" {
				nprops = len(bmffSplit(t, p.body))
				for _, pr := range props {
					pk[j].body = append(append([]byte{}, pk[j].body...), pr...)
				}
			}
		}
		for j, p := range pk {
			if p.typ == "ipma" {
				pk[j].body = ipmaAdd(t, p.body, primary, tilesToo, nprops+1, len(props))
			}
		}
		kids[i].body = bmffJoin(pk)
	}
	newMeta := append(append([]byte{}, meta[:4]...), bmffJoin(kids)...)
	delta := int64(len(newMeta) - len(meta))
	// Shift absolute offsets (construction method 0) if mdat follows meta.
	mdatAfter := false
	for i, b := range top {
		if b.typ == "mdat" && i > metaAt {
			mdatAfter = true
		}
	}
	if mdatAfter {
		kids2 := bmffSplit(t, newMeta[4:])
		for i, k := range kids2 {
			if k.typ == "iloc" {
				kids2[i].body = ilocShift(t, k.body, delta)
			}
		}
		newMeta = append(append([]byte{}, meta[:4]...), bmffJoin(kids2)...)
	}
	top[metaAt].body = newMeta
	return bmffJoin(top)
}

// ipmaAdd appends property indices first..first+n-1 to the association
// list of item (or of every item when all).
func ipmaAdd(t testing.TB, b []byte, item uint32, all bool, first, n int) []byte {
	t.Helper()
	version, wide := b[0], b[3]&1 != 0
	count := binary.BigEndian.Uint32(b[4:])
	out := append([]byte{}, b[:8]...)
	p := b[8:]
	for k := uint32(0); k < count; k++ {
		var id uint32
		if version < 1 {
			id = uint32(binary.BigEndian.Uint16(p))
			out, p = append(out, p[:2]...), p[2:]
		} else {
			id = binary.BigEndian.Uint32(p)
			out, p = append(out, p[:4]...), p[4:]
		}
		cnt := int(p[0])
		size := 1
		if wide {
			size = 2
		}
		list := p[1 : 1+cnt*size]
		p = p[1+cnt*size:]
		if id == item || all {
			out = append(out, byte(cnt+n))
			out = append(out, list...)
			for i := 0; i < n; i++ {
				if wide {
					out = binary.BigEndian.AppendUint16(out, uint16(first+i))
				} else {
					out = append(out, byte(first+i))
				}
			}
		} else {
			out = append(out, byte(cnt))
			out = append(out, list...)
		}
	}
	return out
}

// ilocShift adds delta to the file offsets of items stored in the file
// (construction method 0).
func ilocShift(t testing.TB, b []byte, delta int64) []byte {
	t.Helper()
	out := append([]byte{}, b...)
	version := out[0]
	offSize, lenSize := int(out[4]>>4), int(out[4]&15)
	baseSize, idxSize := int(out[5]>>4), int(out[5]&15)
	if version == 0 {
		idxSize = 0
	}
	p := 6
	var count int
	if version < 2 {
		count, p = int(binary.BigEndian.Uint16(out[p:])), p+2
	} else {
		count, p = int(binary.BigEndian.Uint32(out[p:])), p+4
	}
	get := func(at, n int) int64 {
		var v int64
		for i := 0; i < n; i++ {
			v = v<<8 | int64(out[at+i])
		}
		return v
	}
	put := func(at, n int, v int64) {
		for i := n - 1; i >= 0; i-- {
			out[at+i] = byte(v)
			v >>= 8
		}
	}
	for k := 0; k < count; k++ {
		if version < 2 {
			p += 2
		} else {
			p += 4
		}
		method := 0
		if version >= 1 {
			method = int(binary.BigEndian.Uint16(out[p:]) & 15)
			p += 2
		}
		p += 2 // data reference index
		shifted := false
		if baseSize > 0 && method == 0 {
			put(p, baseSize, get(p, baseSize)+delta)
			shifted = true
		}
		p += baseSize
		n := int(binary.BigEndian.Uint16(out[p:]))
		p += 2
		for e := 0; e < n; e++ {
			p += idxSize
			if method == 0 && !shifted && offSize > 0 {
				put(p, offSize, get(p, offSize)+delta)
			}
			p += offSize + lenSize
		}
	}
	return out
}

// heifSetISPE overwrites the size of every ispe property.
func heifSetISPE(file []byte, w, h uint32) []byte {
	out := append([]byte{}, file...)
	for i := 4; i+16 <= len(out); i++ {
		if string(out[i:i+4]) == "ispe" && binary.BigEndian.Uint32(out[i-4:]) == 20 {
			binary.BigEndian.PutUint32(out[i+8:], w)
			binary.BigEndian.PutUint32(out[i+12:], h)
		}
	}
	return out
}
