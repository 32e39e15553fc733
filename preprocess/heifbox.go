package preprocess

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// This file is a small ISO base media file format (ISO/IEC 14496-12) box
// reader: enough of HEIF (ISO/IEC 23008-12) to learn, before any pixel is
// decoded, what the primary image is, its size (ispe), its transformations
// (irot, imir), its colour description (colr nclx) and bit depth (pixi), and
// for grids how many tiles of which size. Every read is bounds-checked and
// the work is linear in the file size: hostile files get an error, never a
// panic or a large allocation.

// errBox is wrapped by every ISOBMFF parse error.
var errBox = errors.New("malformed ISOBMFF box")

// maxHEIFItems bounds the items and properties read from one file: real
// files have a few dozen (an iPhone grid about 50), the format allows 2^32.
const maxHEIFItems = 1 << 12

// bmffBoxes calls fn for each box in d, in order, with its type and body
// (the bytes after the header). A box of size 0 runs to the end of d.
func bmffBoxes(d []byte, fn func(typ string, body []byte) error) error {
	for len(d) > 0 {
		if len(d) < 8 {
			return fmt.Errorf("%w: %d trailing bytes", errBox, len(d))
		}
		size := uint64(binary.BigEndian.Uint32(d))
		typ := string(d[4:8])
		hdr := uint64(8)
		switch size {
		case 0:
			size = uint64(len(d))
		case 1:
			if len(d) < 16 {
				return fmt.Errorf("%w: truncated %q header", errBox, typ)
			}
			size, hdr = binary.BigEndian.Uint64(d[8:]), 16
		}
		if typ == "uuid" {
			hdr += 16
		}
		if size < hdr || size > uint64(len(d)) {
			return fmt.Errorf("%w: %q box of %d bytes in %d", errBox, typ, size, len(d))
		}
		if err := fn(typ, d[hdr:size]); err != nil {
			return err
		}
		d = d[size:]
	}
	return nil
}

// bmffFind returns the body of the first box of type typ among the boxes of
// d, or nil.
func bmffFind(d []byte, typ string) ([]byte, error) {
	var found []byte
	stop := errors.New("found")
	err := bmffBoxes(d, func(t string, body []byte) error {
		if t == typ {
			found = body
			return stop
		}
		return nil
	})
	if err != nil && err != stop {
		return nil, err
	}
	return found, nil
}

// nclx is a colr box of colour type nclx (ITU-T H.273 code points).
type nclx struct {
	primaries, transfer, matrix uint16
	fullRange                   bool
}

// heifProps are the properties of one item that this package uses.
type heifProps struct {
	w, h int // ispe; 0 when absent
	// orient is the irot and imir properties, in their association order,
	// composed into one EXIF orientation code (1..8).
	orient  int
	colour  *nclx
	depth   int // pixi: bits of the first channel; 0 when absent
	hasClap bool
}

// heifInfo describes the primary image of a HEIF/AVIF file.
type heifInfo struct {
	itemType string // hvc1, av01, grid, iden, ...
	heifProps
	tiles        int // for grids: the number of dimg references
	tileW, tileH int // for grids: the ispe of the first tile
	tileType     string
	tileColour   *nclx
	// edits are where, in the file, the colr nclx payloads and the irot and
	// imir boxes are: heifDecode neutralises them in the copy it hands to
	// libheif (see heif.go).
	edits []heifEdit
	// thumbs are the thumbnail items of the primary image (thmb
	// references), and pitmAt where the primary item id is in the file, 2
	// bytes or 4 when pitmWide: heifreduced.go decodes a thumbnail by
	// making it primary in a copy.
	thumbs   []heifThumb
	pitmAt   int
	pitmWide bool
}

// heifThumb is a thumbnail item of the primary image.
type heifThumb struct {
	id       uint32
	itemType string
	heifProps
	refAt int // offset in the file of the type of its thmb reference box
}

// heifThmb is one thmb reference box: item from is a thumbnail of the
// items in to; body is the box's body, a sub-slice of the file.
type heifThmb struct {
	from uint32
	to   []uint32
	body []byte
}

// maxHEIFThumbs bounds the thmb references read (real files have one or
// two); more are ignored.
const maxHEIFThumbs = 16

// heifEdit locates one property in the file: the offset of its body.
type heifEdit struct {
	typ string
	at  int
}

// parseHEIF reads the meta box of a HEIF or AVIF file.
func parseHEIF(d []byte) (*heifInfo, error) {
	meta, err := bmffFind(d, "meta")
	if err != nil {
		return nil, err
	}
	if meta == nil {
		return nil, fmt.Errorf("%w: no meta box", errBox)
	}
	if len(meta) < 4 {
		return nil, fmt.Errorf("%w: short meta box", errBox)
	}
	var (
		primary         uint32
		havePrimary     bool
		types           = map[uint32]string{}
		props           [][2]any // ipco children: type, body
		assoc           = map[uint32][]int{}
		dimg            = map[uint32][]uint32{}
		iprp, iinf, ref []byte
		edits           []heifEdit
		thmbs           []heifThmb
		pitmAt          int
		pitmWide        bool
	)
	err = bmffBoxes(meta[4:], func(t string, body []byte) error {
		switch t {
		case "pitm":
			if len(body) < 6 {
				return fmt.Errorf("%w: short pitm", errBox)
			}
			if body[0] == 0 {
				primary = uint32(binary.BigEndian.Uint16(body[4:]))
			} else if len(body) >= 8 {
				primary = binary.BigEndian.Uint32(body[4:])
			} else {
				return fmt.Errorf("%w: short pitm", errBox)
			}
			havePrimary = true
			pitmAt, pitmWide = cap(d)-cap(body)+4, body[0] != 0 // body is a sub-slice of d
		case "iinf":
			iinf = body
		case "iprp":
			iprp = body
		case "iref":
			ref = body
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !havePrimary {
		return nil, fmt.Errorf("%w: no primary item (pitm)", errBox)
	}
	if err := parseIINF(iinf, types); err != nil {
		return nil, err
	}
	if iprp != nil {
		ipco, err := bmffFind(iprp, "ipco")
		if err != nil {
			return nil, err
		}
		err = bmffBoxes(ipco, func(t string, body []byte) error {
			if len(props) >= maxHEIFItems {
				return fmt.Errorf("%w: over %d properties", errBox, maxHEIFItems)
			}
			props = append(props, [2]any{t, body})
			switch {
			case t == "irot" || t == "imir", t == "colr" && len(body) >= 11 && string(body[:4]) == "nclx":
				// body is a sub-slice of d: its offset follows from the capacities.
				edits = append(edits, heifEdit{t, cap(d) - cap(body)})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = bmffBoxes(iprp, func(t string, body []byte) error {
			if t == "ipma" {
				return parseIPMA(body, assoc)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if ref != nil {
		if err := parseIREF(ref, dimg, &thmbs); err != nil {
			return nil, err
		}
	}
	itemProps := func(id uint32) heifProps {
		p := heifProps{orient: 1}
		for _, i := range assoc[id] {
			if i < 1 || i > len(props) {
				continue // 0 means "no property"; out of range is ignored as libheif does not
			}
			t, b := props[i-1][0].(string), props[i-1][1].([]byte)
			switch t {
			case "ispe":
				if len(b) >= 12 {
					p.w, p.h = int(binary.BigEndian.Uint32(b[4:])), int(binary.BigEndian.Uint32(b[8:]))
				}
			case "irot":
				if len(b) >= 1 {
					// Anticlockwise quarter turns as EXIF codes.
					p.orient = composeOrient(p.orient, [4]int{1, 8, 3, 6}[b[0]&3])
				}
			case "imir":
				if len(b) >= 1 {
					// libheif (1.15 and 1.18 alike) flips top-bottom for
					// axis 0 and left-right for axis 1; followed here.
					p.orient = composeOrient(p.orient, [2]int{4, 2}[b[0]&1])
				}
			case "colr":
				if len(b) >= 11 && string(b[:4]) == "nclx" && p.colour == nil {
					p.colour = &nclx{
						primaries: binary.BigEndian.Uint16(b[4:]),
						transfer:  binary.BigEndian.Uint16(b[6:]),
						matrix:    binary.BigEndian.Uint16(b[8:]),
						fullRange: b[10]&0x80 != 0,
					}
				}
			case "pixi":
				if len(b) >= 6 && b[4] > 0 {
					p.depth = int(b[5])
				}
			case "clap":
				p.hasClap = true
			}
		}
		return p
	}
	info := &heifInfo{itemType: types[primary], heifProps: itemProps(primary), edits: edits}
	if info.itemType == "" {
		return nil, fmt.Errorf("%w: primary item %d has no item info", errBox, primary)
	}
	info.pitmAt, info.pitmWide = pitmAt, pitmWide
	for _, r := range thmbs {
		if slices.Contains(r.to, primary) && r.from != primary {
			info.thumbs = append(info.thumbs, heifThumb{id: r.from, itemType: types[r.from],
				heifProps: itemProps(r.from), refAt: cap(d) - cap(r.body) - 4})
		}
	}
	if tiles := dimg[primary]; len(tiles) > 0 {
		info.tiles = len(tiles)
		tp := itemProps(tiles[0])
		info.tileW, info.tileH, info.tileColour = tp.w, tp.h, tp.colour
		info.tileType = types[tiles[0]]
		if info.depth == 0 {
			info.depth = tp.depth
		}
	}
	return info, nil
}

// parseIINF maps item ids to item types from the infe boxes (versions 2
// and 3; older ones carry no type and are skipped).
func parseIINF(b []byte, types map[uint32]string) error {
	if len(b) < 6 {
		return fmt.Errorf("%w: no item info (iinf)", errBox)
	}
	skip := 6
	if b[0] != 0 {
		skip = 8
	}
	if len(b) < skip {
		return fmt.Errorf("%w: short iinf", errBox)
	}
	return bmffBoxes(b[skip:], func(t string, e []byte) error {
		if t != "infe" || len(e) < 4 {
			return nil
		}
		if len(types) >= maxHEIFItems {
			return fmt.Errorf("%w: over %d items", errBox, maxHEIFItems)
		}
		switch e[0] {
		case 2:
			if len(e) >= 12 {
				types[uint32(binary.BigEndian.Uint16(e[4:]))] = string(e[8:12])
			}
		case 3:
			if len(e) >= 14 {
				types[binary.BigEndian.Uint32(e[4:])] = string(e[10:14])
			}
		}
		return nil
	})
}

// parseIPMA reads item-property associations: assoc[item] lists 1-based
// indices into ipco.
func parseIPMA(b []byte, assoc map[uint32][]int) error {
	if len(b) < 8 {
		return fmt.Errorf("%w: short ipma", errBox)
	}
	version, wide := b[0], b[3]&1 != 0
	n := binary.BigEndian.Uint32(b[4:])
	b = b[8:]
	for k := uint32(0); k < n; k++ {
		if len(assoc) >= maxHEIFItems {
			return fmt.Errorf("%w: over %d items in ipma", errBox, maxHEIFItems)
		}
		var id uint32
		if version < 1 {
			if len(b) < 3 {
				return fmt.Errorf("%w: truncated ipma", errBox)
			}
			id, b = uint32(binary.BigEndian.Uint16(b)), b[2:]
		} else {
			if len(b) < 5 {
				return fmt.Errorf("%w: truncated ipma", errBox)
			}
			id, b = binary.BigEndian.Uint32(b), b[4:]
		}
		cnt := int(b[0])
		b = b[1:]
		size := 1
		if wide {
			size = 2
		}
		if len(b) < cnt*size {
			return fmt.Errorf("%w: truncated ipma", errBox)
		}
		for j := 0; j < cnt; j++ {
			var idx int
			if wide {
				idx = int(binary.BigEndian.Uint16(b[j*2:]) & 0x7fff)
			} else {
				idx = int(b[j] & 0x7f)
			}
			assoc[id] = append(assoc[id], idx)
		}
		b = b[cnt*size:]
	}
	return nil
}

// parseIREF collects the dimg (derived image) references, grid → tiles,
// and the first maxHEIFThumbs thmb references, thumbnail → images.
func parseIREF(b []byte, dimg map[uint32][]uint32, thmbs *[]heifThmb) error {
	if len(b) < 4 {
		return fmt.Errorf("%w: short iref", errBox)
	}
	wide := b[0] != 0
	idSize := 2
	if wide {
		idSize = 4
	}
	id := func(p []byte) uint32 {
		if wide {
			return binary.BigEndian.Uint32(p)
		}
		return uint32(binary.BigEndian.Uint16(p))
	}
	total := 0
	return bmffBoxes(b[4:], func(t string, r []byte) error {
		if t == "thmb" && len(*thmbs) < maxHEIFThumbs {
			// Thumbnails are optional: a damaged reference is skipped.
			if len(r) >= 2*idSize {
				n := int(binary.BigEndian.Uint16(r[idSize:]))
				to := make([]uint32, 0, min(n, maxHEIFThumbs))
				for j := 0; j < n && j < maxHEIFThumbs && 2+idSize*(j+2) <= len(r); j++ {
					to = append(to, id(r[idSize+2+j*idSize:]))
				}
				*thmbs = append(*thmbs, heifThmb{from: id(r), to: to, body: r})
			}
			return nil
		}
		if t != "dimg" {
			return nil
		}
		if len(r) < 2*idSize {
			return fmt.Errorf("%w: short dimg reference", errBox)
		}
		from, n := id(r), int(binary.BigEndian.Uint16(r[idSize:]))
		r = r[idSize+2:]
		if len(r) < n*idSize {
			return fmt.Errorf("%w: truncated dimg reference", errBox)
		}
		if total += n; total > maxHEIFItems {
			return fmt.Errorf("%w: over %d references", errBox, maxHEIFItems)
		}
		for j := 0; j < n; j++ {
			dimg[from] = append(dimg[from], id(r[j*idSize:]))
		}
		return nil
	})
}
