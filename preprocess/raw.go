package preprocess

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math"
)

// This file embeds camera RAW files through the largest JPEG preview the
// camera stored in them: its own rendering (white balance, tone curve,
// lens corrections), what photo managers show before a RAW is developed.
// Developing the sensor data is out of scope.
//
// Where the previews are:
//   - TIFF-based (DNG, CR2, NEF, ARW, PEF, SRW, ORF, RW2, ...): every IFD
//     reachable from IFD0 (the next-IFD chain, SubIFDs 0x014a, the EXIF IFD
//     0x8769) may hold JPEGInterchangeFormat/Length (0x0201/0x0202), or a
//     single strip (0x0111/0x0117) of compression 6 or 7; RW2 has
//     JpgFromRaw (0x002e) in IFD0; ORF has PreviewImageStart/Length
//     (0x0101/0x0102) in the CameraSettings IFD (0x2020) of the Olympus
//     MakerNote.
//   - RAF: the header holds the JPEG offset and length at bytes 84 and 88.
//   - CR3 (ISOBMFF): PRVW in the preview uuid box, THMB in the moov uuid box.
//
// Only baseline or progressive JPEGs count (a DNG or CR2 keeps its sensor
// data as lossless JPEG, SOF3, which is not a picture); the largest by
// pixels, then by bytes, wins. Orientation comes from the RAW's own
// Orientation tag (IFD0; CMT1 for CR3), because that is what the camera and
// every RAW developer use; a RAF has no TIFF of its own, and any RAW without
// the tag falls back to the preview's EXIF.
//
// Hostile files: every offset is checked against the file, an IFD is read
// at most once (loops end), and the number of IFDs, SubIFDs and candidate
// previews is capped, so the work is bounded by the file size and no
// memory is allocated for the preview (it is a sub-slice of the file).

// errNoPreview is wrapped when a RAW file holds no usable JPEG preview.
var errNoPreview = errors.New("no embedded JPEG preview")

const (
	maxRawIFDs       = 256 // IFDs visited in one file
	maxRawSubIFDs    = 64  // SubIFD offsets taken from one tag
	maxRawCandidates = 64
)

// rawPreview is a JPEG found inside a RAW file.
type rawPreview struct {
	jpeg   []byte
	w, h   int
	orient int // the RAW's own Orientation tag, 0 when absent
}

// decodeRAW decodes the largest embedded preview of a RAW file through the
// package's JPEG path, with the same pixel limit.
func decodeRAW(data []byte, name, kind string, maxPixels int64) (image.Image, error) {
	p, err := findRAWPreview(data)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w: %s: %w", name, ErrUnsupported, kind, err)
	}
	img, _, err := decodeImage(p.jpeg, fmt.Sprintf("%s (%s embedded preview)", name, kind), maxPixels)
	return img, err
}

// rawOrientation is the orientation to apply to the preview of a RAW file.
func rawOrientation(data []byte) int {
	p, err := findRAWPreview(data)
	if err != nil {
		return 1
	}
	o := p.orient
	if o < 1 || o > 8 {
		o = tiffOrientation(jpegExif(p.jpeg))
	}
	if o < 1 || o > 8 {
		return 1
	}
	return o
}

// findRAWPreview locates the largest usable JPEG preview of a RAW file.
func findRAWPreview(d []byte) (rawPreview, error) {
	cands, err := rawPreviews(d)
	if err != nil {
		return rawPreview{}, err
	}
	return largestPreview(cands), nil
}

// largestPreview picks the largest preview by pixels, then by bytes.
func largestPreview(cands []rawPreview) rawPreview {
	best := cands[0]
	for _, c := range cands[1:] {
		if a, b := int64(c.w)*int64(c.h), int64(best.w)*int64(best.h); a > b || (a == b && len(c.jpeg) > len(best.jpeg)) {
			best = c
		}
	}
	return best
}

// rawPreviews lists the usable JPEG previews of a RAW file (at least one),
// in file order, each with the RAW's own orientation.
func rawPreviews(d []byte) ([]rawPreview, error) {
	var cands []rawPreview
	orient := 0
	addJPEG := func(j []byte) {
		if len(cands) >= maxRawCandidates {
			return
		}
		if w, h, ok := jpegPictureSize(j); ok {
			cands = append(cands, rawPreview{jpeg: j, w: w, h: h})
		}
	}
	add := func(off, n uint64) {
		if off < uint64(len(d)) && n <= uint64(len(d))-off {
			addJPEG(d[off : off+n])
		}
	}
	switch {
	case len(d) >= 92 && string(d[:15]) == "FUJIFILMCCD-RAW":
		add(uint64(binary.BigEndian.Uint32(d[84:])), uint64(binary.BigEndian.Uint32(d[88:])))
	case len(d) >= 12 && string(d[4:8]) == "ftyp":
		if err := cr3Previews(d, 0, addJPEG, &orient); err != nil {
			return nil, err
		}
	default:
		t, err := newTIFFWalker(d)
		if err != nil {
			return nil, err
		}
		t.add = add
		t.walkChain(t.ifd0, true)
		orient = t.orient
	}
	if len(cands) == 0 {
		return nil, errNoPreview
	}
	for i := range cands {
		cands[i].orient = orient
	}
	return cands, nil
}

// jpegPictureSize reads the frame header of a JPEG and reports its size if
// it is a baseline, extended or progressive Huffman frame (not lossless).
func jpegPictureSize(j []byte) (w, h int, ok bool) {
	if len(j) < 4 || j[0] != 0xff || j[1] != 0xd8 {
		return 0, 0, false
	}
	w, h, sof, ok := jpegFrame(j)
	if !ok || sof > 0xc2 { // lossless, hierarchical or arithmetic frames
		return 0, 0, false
	}
	return w, h, true
}

// jpegFrame walks a JPEG's markers from after SOI to its frame header
// (SOFn) and returns the size and the marker; ok is false without one
// before the scan, or when it is malformed.
func jpegFrame(j []byte) (w, h int, sof byte, ok bool) {
	for i := 2; i+4 <= len(j); {
		if j[i] != 0xff {
			return 0, 0, 0, false
		}
		m := j[i+1]
		switch {
		case m == 0xff:
			i++
			continue
		case m == 0x01 || (m >= 0xd0 && m <= 0xd7):
			i += 2
			continue
		case m == 0xda || m == 0xd9:
			return 0, 0, 0, false
		}
		n := int(binary.BigEndian.Uint16(j[i+2:]))
		if n < 2 || i+2+n > len(j) {
			return 0, 0, 0, false
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			if n < 8 {
				return 0, 0, 0, false
			}
			h, w = int(binary.BigEndian.Uint16(j[i+5:])), int(binary.BigEndian.Uint16(j[i+7:]))
			return w, h, m, w > 0 && h > 0
		}
		i += 2 + n
	}
	return 0, 0, 0, false
}

// tiffWalker visits the IFDs of a TIFF-structured RAW file.
type tiffWalker struct {
	d      []byte
	bo     binary.ByteOrder
	ifd0   uint32
	seen   map[uint64]bool
	orient int
	add    func(off, n uint64)
	// crop is a DNG's DefaultCropSize (width, height) of its main raw
	// image (NewSubfileType 0): the size a developed picture has.
	crop [2]uint64
}

func newTIFFWalker(d []byte) (*tiffWalker, error) {
	if len(d) < 8 {
		return nil, fmt.Errorf("%w: %d-byte TIFF header", errNoPreview, len(d))
	}
	t := &tiffWalker{d: d, seen: map[uint64]bool{}}
	switch string(d[:2]) {
	case "II":
		t.bo = binary.LittleEndian
	case "MM":
		t.bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("%w: not a TIFF byte order %q", errNoPreview, d[:2])
	}
	// The magic is 42 for TIFF, "RO"/"RS"/"OR" for ORF, 0x55 for RW2; the
	// IFD0 offset is at 4 in all of them.
	t.ifd0 = t.bo.Uint32(d[4:])
	return t, nil
}

// tiffEntry is one IFD entry; val is the value bytes (inline or at the
// offset), nil when they fall outside the file.
type tiffEntry struct {
	tag, typ uint16
	count    uint32
	val      []byte
	off      uint64 // where val starts in the file
}

var tiffTypeSize = [...]uint64{0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4}

// entries reads the IFD at off (relative to base) and returns its entries
// and the next-IFD offset.
func (t *tiffWalker) entries(base, off uint64) ([]tiffEntry, uint32, bool) {
	at := base + off
	if t.seen[at] || len(t.seen) >= maxRawIFDs || at+2 > uint64(len(t.d)) {
		return nil, 0, false
	}
	t.seen[at] = true
	n := uint64(t.bo.Uint16(t.d[at:]))
	end := at + 2 + 12*n
	if end > uint64(len(t.d)) {
		return nil, 0, false
	}
	var next uint32
	if end+4 <= uint64(len(t.d)) {
		next = t.bo.Uint32(t.d[end:])
	}
	es := make([]tiffEntry, 0, n)
	for k := uint64(0); k < n; k++ {
		e := t.d[at+2+12*k:]
		te := tiffEntry{tag: t.bo.Uint16(e), typ: t.bo.Uint16(e[2:]), count: t.bo.Uint32(e[4:])}
		size := uint64(1)
		if int(te.typ) < len(tiffTypeSize) && te.typ > 0 {
			size = tiffTypeSize[te.typ]
		}
		size *= uint64(te.count)
		if size <= 4 {
			te.val, te.off = e[8:8+size], at+2+12*k+8
		} else if o := base + uint64(t.bo.Uint32(e[8:])); o < uint64(len(t.d)) && size <= uint64(len(t.d))-o {
			te.val, te.off = t.d[o:o+size], o
		} else {
			te.off = base + uint64(t.bo.Uint32(e[8:]))
		}
		es = append(es, te)
	}
	return es, next, true
}

// uint reads the i-th SHORT or LONG of an entry.
func (t *tiffWalker) uint(e tiffEntry, i int) (uint64, bool) {
	switch e.typ {
	case 3, 8:
		if len(e.val) >= 2*(i+1) {
			return uint64(t.bo.Uint16(e.val[2*i:])), true
		}
	case 4, 9, 13:
		if len(e.val) >= 4*(i+1) {
			return uint64(t.bo.Uint32(e.val[4*i:])), true
		}
	}
	return 0, false
}

// dngCropSize is the DefaultCropSize of a DNG's main raw image, the size
// of the developed picture (before its orientation), when the file has
// one: its previews are often smaller.
func dngCropSize(d []byte) (w, h int, ok bool) {
	t, err := newTIFFWalker(d)
	if err != nil {
		return 0, 0, false
	}
	t.add = func(off, n uint64) {}
	t.walkChain(t.ifd0, true)
	if t.crop[0] == 0 || t.crop[0] > 1<<20 || t.crop[1] > 1<<20 {
		return 0, 0, false
	}
	return int(t.crop[0]), int(t.crop[1]), true
}

// walkChain visits an IFD and those after it in the next-IFD chain.
func (t *tiffWalker) walkChain(off uint32, first bool) {
	for off != 0 {
		next, ok := t.walkIFD(0, uint64(off), first)
		if !ok {
			return
		}
		off, first = next, false
	}
}

// walkIFD collects the previews of one IFD and descends into its SubIFDs,
// EXIF IFD and Olympus MakerNote.
func (t *tiffWalker) walkIFD(base, off uint64, isIFD0 bool) (uint32, bool) {
	es, next, ok := t.entries(base, off)
	if !ok {
		return 0, false
	}
	var compression, jpegOff, jpegLen, stripOff, stripLen, subfile uint64
	var strips int
	var crop [2]uint64
	for _, e := range es {
		v, _ := t.uint(e, 0)
		switch e.tag {
		case 0x00fe:
			subfile = v
		case 0xc620: // DNG DefaultCropSize: SHORT, LONG or RATIONAL
			for i := range crop {
				crop[i], _ = t.uint(e, i)
				if r, ok := t.rational(e, i); ok && r > 0 && r < 1<<20 {
					crop[i] = uint64(math.Round(r))
				}
			}
		case 0x0112:
			if isIFD0 && v >= 1 && v <= 8 {
				t.orient = int(v)
			}
		case 0x0103:
			compression = v
		case 0x0201:
			jpegOff = v
		case 0x0202:
			jpegLen = v
		case 0x0111:
			stripOff, strips = v, int(e.count)
		case 0x0117:
			stripLen = v
		case 0x002e: // RW2 JpgFromRaw: the JPEG is the value itself
			if isIFD0 && e.val != nil {
				t.add(e.off, uint64(len(e.val)))
			}
		case 0x014a: // SubIFDs
			for i := 0; i < min(int(e.count), maxRawSubIFDs); i++ {
				if sub, ok := t.uint(e, i); ok {
					t.walkIFD(0, sub, false)
				}
			}
		case 0x8769: // EXIF IFD
			t.walkIFD(0, v, false)
		case 0x927c: // MakerNote
			t.olympusMakerNote(e)
		}
	}
	if subfile == 0 && crop[0] > 0 && crop[1] > 0 && t.crop[0] == 0 {
		t.crop = crop
	}
	if jpegLen > 0 {
		t.add(base+jpegOff, jpegLen)
	}
	if (compression == 6 || compression == 7) && strips == 1 && stripLen > 0 {
		t.add(base+stripOff, stripLen)
	}
	return next, true
}

// olympusMakerNote finds PreviewImageStart/Length in the CameraSettings IFD
// of an Olympus MakerNote ("OLYMPUS\0II\3\0": offsets from the MakerNote
// start; "OLYMP\0": offsets from the TIFF header).
func (t *tiffWalker) olympusMakerNote(e tiffEntry) {
	var base, ifd uint64
	switch v := e.val; {
	case len(v) >= 16 && string(v[:8]) == "OLYMPUS\x00":
		base, ifd = e.off, 12
	case len(v) >= 10 && string(v[:6]) == "OLYMP\x00":
		base, ifd = 0, e.off+8
	default:
		return
	}
	es, _, ok := t.entries(base, ifd)
	if !ok {
		return
	}
	for _, me := range es {
		if me.tag != 0x2020 {
			continue
		}
		sub, ok := t.uint(me, 0)
		if me.typ == 7 || !ok { // stored inline as an UNDEFINED sub-IFD
			sub = me.off - base
		}
		cs, _, ok := t.entries(base, sub)
		if !ok {
			return
		}
		var start, length uint64
		for _, c := range cs {
			switch c.tag {
			case 0x0101:
				start, _ = t.uint(c, 0)
			case 0x0102:
				length, _ = t.uint(c, 0)
			}
		}
		if length > 0 {
			t.add(base+start, length)
		}
		return
	}
}

// cr3Previews searches the boxes of a CR3 file for PRVW and THMB (each a
// small header then a JPEG) and CMT1 (a TIFF IFD0 with the Orientation).
func cr3Previews(d []byte, depth int, add func([]byte), orient *int) error {
	if depth > 3 {
		return nil
	}
	return bmffBoxes(d, func(typ string, body []byte) error {
		switch typ {
		case "moov":
			return cr3Previews(body, depth+1, add, orient)
		case "uuid":
			// Canon's uuid boxes hold boxes, the preview one after 8 bytes
			// of its own; inner damage only loses those previews.
			_ = cr3Previews(body, depth+1, add, orient)
			if len(body) > 8 {
				_ = cr3Previews(body[8:], depth+1, add, orient)
			}
		case "PRVW", "THMB":
			for i := 0; i+3 <= min(len(body), 32); i++ {
				if body[i] == 0xff && body[i+1] == 0xd8 && body[i+2] == 0xff {
					add(body[i:])
					break
				}
			}
		case "CMT1":
			if o := tiffOrientation(body); o >= 1 && o <= 8 {
				*orient = o
			}
		}
		return nil
	})
}
