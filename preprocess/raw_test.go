package preprocess

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

// The RAW containers here are built from the formats' documented layouts
// (TIFF 6.0 / TIFF-EP IFDs; DNG SubIFDs; Canon CR2 and CR3; Nikon,
// Sony, Pentax IFD0/SubIFD previews; Olympus MakerNote; Panasonic
// JpgFromRaw; the Fujifilm RAF header), each holding JPEGs of distinct
// sizes, so a test can tell which preview was chosen.

// rawTestJPEG encodes a w x h baseline JPEG whose colour depends on seed.
func rawTestJPEG(t testing.TB, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{byte(x*255/w) ^ seed, byte(y * 255 / h), seed, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rawLosslessJPEG is the start of a lossless (SOF3) JPEG announcing w x h, as
// DNG and CR2 store sensor data: never a preview.
func rawLosslessJPEG(w, h uint16) []byte {
	return []byte{0xff, 0xd8, 0xff, 0xc3, 0, 11, 14, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0,
		0xff, 0xd9}
}

// tiffByteOrder reads and appends (binary.LittleEndian, binary.BigEndian).
type tiffByteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// tEntry is an IFD entry for tiffBuild: a value (raw bytes, inline when at
// most 4), or a reference to another IFD or to a blob whose offset it holds.
type tEntry struct {
	tag, typ uint16
	count    uint32
	val      []byte
	ifd      int // >0: 1-based index of the IFD whose offset is the value
	blob     int // >0: 1-based index of the blob whose offset is the value
}

type tIFD struct {
	entries []tEntry
	next    int // 1-based index of the next IFD, 0 for none
}

// tiffBuild lays out header | IFDs (with out-of-line values) | blobs.
// magic is the 2 bytes after the byte order ("*\x00" for TIFF).
func tiffBuild(bo tiffByteOrder, magic string, ifds []tIFD, blobs [][]byte) []byte {
	order := "II"
	if bo.Uint16([]byte{0, 1}) == 1 {
		order = "MM"
	}
	ifdOff := make([]uint32, len(ifds))
	off := uint32(8)
	for i, d := range ifds {
		ifdOff[i] = off
		off += 2 + 12*uint32(len(d.entries)) + 4
		for _, e := range d.entries {
			if len(e.val) > 4 {
				off += uint32(len(e.val)+1) &^ 1
			}
		}
	}
	blobOff := make([]uint32, len(blobs))
	for i, b := range blobs {
		blobOff[i] = off
		off += uint32(len(b))
	}
	out := make([]byte, 0, off)
	out = append(out, order...)
	out = append(out, magic...)
	out = bo.AppendUint32(out, 8)
	for i, d := range ifds {
		out = bo.AppendUint16(out, uint16(len(d.entries)))
		extra := ifdOff[i] + 2 + 12*uint32(len(d.entries)) + 4
		var tail []byte
		for _, e := range d.entries {
			out = bo.AppendUint16(out, e.tag)
			out = bo.AppendUint16(out, e.typ)
			out = bo.AppendUint32(out, e.count)
			switch {
			case e.ifd > 0:
				out = bo.AppendUint32(out, ifdOff[e.ifd-1])
			case e.blob > 0:
				out = bo.AppendUint32(out, blobOff[e.blob-1])
			case len(e.val) > 4:
				out = bo.AppendUint32(out, extra+uint32(len(tail)))
				tail = append(tail, e.val...)
				if len(e.val)&1 == 1 {
					tail = append(tail, 0)
				}
			default:
				v := make([]byte, 4)
				copy(v, e.val)
				out = append(out, v...)
			}
		}
		next := uint32(0)
		if d.next > 0 {
			next = ifdOff[d.next-1]
		}
		out = bo.AppendUint32(out, next)
		out = append(out, tail...)
	}
	for _, b := range blobs {
		out = append(out, b...)
	}
	return out
}

func tiffShort(bo tiffByteOrder, tag, v uint16) tEntry {
	return tEntry{tag: tag, typ: 3, count: 1, val: bo.AppendUint16(nil, v)}
}

func tiffLong(bo tiffByteOrder, tag uint16, v uint32) tEntry {
	return tEntry{tag: tag, typ: 4, count: 1, val: bo.AppendUint32(nil, v)}
}

func tiffBlobAt(tag uint16, blob int) tEntry { return tEntry{tag: tag, typ: 4, count: 1, blob: blob} }
func tiffIFDAt(tag uint16, ifd int) tEntry   { return tEntry{tag: tag, typ: 4, count: 1, ifd: ifd} }

// rawCase is a built RAW file and what must come out of it.
type rawCase struct {
	name, file string
	data       []byte
	w, h       int // the preview that must be chosen
	orient     int
}

// rawCases builds one file per RAW family. Every file holds a 160x120
// thumbnail, a 320x240 or larger preview, and sometimes a lossless JPEG
// announcing 6000x4000 that must be skipped; the preview to pick is w x h.
func rawCases(t testing.TB) []rawCase {
	le, be := binary.LittleEndian, binary.BigEndian
	thumb := rawTestJPEG(t, 160, 120, 1)
	mid := rawTestJPEG(t, 320, 240, 2)
	big := rawTestJPEG(t, 480, 320, 3)
	raw := rawLosslessJPEG(6000, 4000)
	n := func(b []byte) uint32 { return uint32(len(b)) }
	var cases []rawCase

	// DNG: IFD0 thumbnail strip; SubIFDs: the raw (lossless JPEG) and the
	// preview (a JPEG strip, compression 7); Orientation in IFD0.
	dng := tiffBuild(le, "*\x00", []tIFD{
		{entries: []tEntry{
			tiffLong(le, 0x00fe, 1), tiffShort(le, 0x0103, 7), tiffBlobAt(0x0111, 1), tiffLong(le, 0x0117, n(thumb)),
			tiffShort(le, 0x0112, 6),
			{tag: 0x014a, typ: 4, count: 2, val: make([]byte, 8)}, // patched below
			{tag: 0xc612, typ: 1, count: 4, val: []byte{1, 4, 0, 0}},
		}},
		{entries: []tEntry{tiffLong(le, 0x00fe, 0), tiffShort(le, 0x0103, 7), tiffBlobAt(0x0111, 2), tiffLong(le, 0x0117, n(raw))}},
		{entries: []tEntry{tiffLong(le, 0x00fe, 1), tiffShort(le, 0x0103, 7), tiffBlobAt(0x0111, 3), tiffLong(le, 0x0117, n(big))}},
	}, [][]byte{thumb, raw, big})
	// Point the two SubIFD offsets (an out-of-line LONG[2]) at IFDs 2 and 3.
	dng = patchSubIFDs(t, dng, le)
	cases = append(cases, rawCase{"DNG", "a.dng", dng, 480, 320, 6})

	// CR2: IFD0 is a full-size JPEG strip (compression 6), IFD1 a
	// thumbnail by JPEGInterchangeFormat, IFD3 the lossless raw.
	cr2 := tiffBuild(le, "*\x00", []tIFD{
		{entries: []tEntry{tiffShort(le, 0x0103, 6), tiffBlobAt(0x0111, 1), tiffLong(le, 0x0117, n(big)), tiffShort(le, 0x0112, 8)}, next: 2},
		{entries: []tEntry{tiffBlobAt(0x0201, 2), tiffLong(le, 0x0202, n(thumb))}, next: 3},
		{entries: []tEntry{tiffShort(le, 0x0103, 6), tiffBlobAt(0x0111, 3), tiffLong(le, 0x0117, n(raw))}},
	}, [][]byte{big, thumb, raw})
	cr2 = append(cr2[:8:8], append([]byte("CR\x02\x00\x00\x00\x00\x00"), cr2[8:]...)...)
	cr2 = shiftTIFF(t, cr2, le, 8)
	cases = append(cases, rawCase{"CR2", "a.cr2", cr2, 480, 320, 8})

	// NEF (big-endian): IFD0 thumbnail; SubIFD with JpgFromRaw.
	nef := tiffBuild(be, "\x00*", []tIFD{
		{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(be, 0x0202, n(thumb)), tiffIFDAt(0x014a, 2), tiffShort(be, 0x0112, 3)}},
		{entries: []tEntry{tiffBlobAt(0x0201, 2), tiffLong(be, 0x0202, n(big))}},
	}, [][]byte{thumb, big})
	cases = append(cases, rawCase{"NEF", "DSC_0001.NEF", nef, 480, 320, 3})

	// ARW: IFD0 JPEGInterchangeFormat, EXIF IFD without previews.
	arw := tiffBuild(le, "*\x00", []tIFD{
		{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, n(mid)), tiffIFDAt(0x8769, 2)}},
		{entries: []tEntry{tiffShort(le, 0xa002, 6000)}},
	}, [][]byte{mid})
	cases = append(cases, rawCase{"ARW", "a.arw", arw, 320, 240, 0})

	// PEF: the preview is in the third IFD of the chain.
	pef := tiffBuild(le, "*\x00", []tIFD{
		{entries: []tEntry{tiffShort(le, 0x0112, 1)}, next: 2},
		{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, n(thumb))}, next: 3},
		{entries: []tEntry{tiffBlobAt(0x0201, 2), tiffLong(le, 0x0202, n(big))}},
	}, [][]byte{thumb, big})
	cases = append(cases, rawCase{"PEF", "a.pef", pef, 480, 320, 1})

	// ORF: "IIRO"; EXIF IFD -> MakerNote "OLYMPUS\0II\3\0" whose IFD has
	// CameraSettings (0x2020) with PreviewImageStart/Length, offsets from
	// the MakerNote start.
	cases = append(cases, rawCase{"ORF", "a.orf", buildORF(t, thumb, big), 480, 320, 6})

	// RW2: "IIU\0"; JpgFromRaw (0x002e) holds the JPEG itself.
	rw2 := tiffBuild(le, "U\x00", []tIFD{
		{entries: []tEntry{{tag: 0x002e, typ: 7, count: n(big), val: big}, tiffShort(le, 0x0112, 1)}},
	}, nil)
	cases = append(cases, rawCase{"RW2", "a.rw2", rw2, 480, 320, 1})

	cases = append(cases, rawCase{"RAF", "a.raf", buildRAF(big), 480, 320, 0})
	cases = append(cases, rawCase{"CR3", "a.cr3", buildCR3(t, thumb, big, 8), 480, 320, 8})
	return cases
}

// patchSubIFDs fills the SubIFDs entry (0x014a, LONG[2]) of IFD0 with the
// offsets of the second and third IFDs, found by walking the chain layout.
func patchSubIFDs(t testing.TB, d []byte, bo binary.ByteOrder) []byte {
	t.Helper()
	d = bytes.Clone(d)
	ifd0 := bo.Uint32(d[4:])
	n0 := uint32(bo.Uint16(d[ifd0:]))
	// IFD0's out-of-line values follow it; IFD 2 starts after them.
	end0 := ifd0 + 2 + 12*n0 + 4
	var extra uint32
	for k := uint32(0); k < n0; k++ {
		e := ifd0 + 2 + 12*k
		if size := bo.Uint32(d[e+4:]) * uint32(tiffTypeSize[bo.Uint16(d[e+2:])]); size > 4 {
			extra += (size + 1) &^ 1
		}
	}
	ifd1 := end0 + extra
	ifd2 := ifd1 + 2 + 12*uint32(bo.Uint16(d[ifd1:])) + 4
	for k := uint32(0); k < n0; k++ {
		e := ifd0 + 2 + 12*k
		if bo.Uint16(d[e:]) == 0x014a {
			v := bo.Uint32(d[e+8:])
			bo.PutUint32(d[v:], ifd1)
			bo.PutUint32(d[v+4:], ifd2)
		}
	}
	return d
}

// shiftTIFF adds delta to every IFD and value offset after bytes were
// inserted at 8 (the CR2 header), by re-walking the IFDs.
func shiftTIFF(t testing.TB, d []byte, bo binary.ByteOrder, delta uint32) []byte {
	t.Helper()
	d = bytes.Clone(d)
	bo.PutUint32(d[4:], bo.Uint32(d[4:])+delta)
	seen := map[uint32]bool{}
	for off := bo.Uint32(d[4:]); off != 0 && !seen[off]; {
		seen[off] = true
		n := uint32(bo.Uint16(d[off:]))
		for k := uint32(0); k < n; k++ {
			e := off + 2 + 12*k
			tag, typ, count := bo.Uint16(d[e:]), bo.Uint16(d[e+2:]), bo.Uint32(d[e+4:])
			size := count * uint32(tiffTypeSize[typ])
			if size > 4 || tag == 0x0111 || tag == 0x0201 || tag == 0x014a || tag == 0x8769 {
				bo.PutUint32(d[e+8:], bo.Uint32(d[e+8:])+delta)
			}
		}
		next := off + 2 + 12*n
		if v := bo.Uint32(d[next:]); v != 0 {
			bo.PutUint32(d[next:], v+delta)
		}
		off = bo.Uint32(d[next:])
	}
	return d
}

// buildORF makes an Olympus ORF whose MakerNote holds the preview.
func buildORF(t testing.TB, thumb, big []byte) []byte {
	le := binary.LittleEndian
	// MakerNote: header (12 bytes), IFD with 0x2020 -> CameraSettings IFD,
	// then the preview; offsets relative to the MakerNote start.
	mn := []byte("OLYMPUS\x00II\x03\x00")
	ifd := uint32(len(mn))
	cs := ifd + 2 + 12 + 4
	jpg := cs + 2 + 2*12 + 4
	mn = le.AppendUint16(mn, 1)
	mn = le.AppendUint16(mn, 0x2020)
	mn = le.AppendUint16(mn, 13) // IFD
	mn = le.AppendUint32(mn, 1)
	mn = le.AppendUint32(mn, cs)
	mn = le.AppendUint32(mn, 0)
	mn = le.AppendUint16(mn, 2)
	for _, e := range [][2]uint32{{0x0101, jpg}, {0x0102, uint32(len(big))}} {
		mn = le.AppendUint16(mn, uint16(e[0]))
		mn = le.AppendUint16(mn, 4)
		mn = le.AppendUint32(mn, 1)
		mn = le.AppendUint32(mn, e[1])
	}
	mn = le.AppendUint32(mn, 0)
	mn = append(mn, big...)
	return tiffBuild(le, "RO", []tIFD{
		{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, uint32(len(thumb))), tiffIFDAt(0x8769, 2), tiffShort(le, 0x0112, 6)}},
		{entries: []tEntry{{tag: 0x927c, typ: 7, count: uint32(len(mn)), val: mn}}},
	}, [][]byte{thumb})
}

// buildRAF makes a Fujifilm RAF: the 84-byte header and directory start,
// then the JPEG offset and length (big-endian) at 84 and 88.
func buildRAF(jpg []byte) []byte {
	h := make([]byte, 160)
	copy(h, "FUJIFILMCCD-RAW 0201FF383501")
	copy(h[28:], "X-T00")
	binary.BigEndian.PutUint32(h[84:], 160)
	binary.BigEndian.PutUint32(h[88:], uint32(len(jpg)))
	return append(h, jpg...)
}

// buildCR3 makes a Canon CR3: ftyp crx, moov with Canon's uuid box
// (CMT1 = a TIFF IFD0 with the Orientation, THMB = the thumbnail), and the
// preview uuid box with 8 bytes then PRVW.
func buildCR3(t testing.TB, thumb, prvw []byte, orient uint16) []byte {
	le := binary.LittleEndian
	cmt1 := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffShort(le, 0x0112, orient)}}}, nil)
	thmb := append([]byte{0, 0, 0, 0, 0, 160, 0, 120}, binary.BigEndian.AppendUint32(nil, uint32(len(thumb)))...)
	thmb = append(append(thmb, 0, 1, 0, 0), thumb...)
	canon := append([]byte("\x85\xc0\xb6\x87\x82\x0f\x11\xe0\x81\x11\xf4\xce\x46\x2b\x6a\x48"),
		append(bmffBox("CMT1", cmt1), bmffBox("THMB", thmb)...)...)
	pv := append([]byte{0, 0, 0, 0, 0, 1, 0x01, 0xe0, 0x01, 0x40, 0, 1}, binary.BigEndian.AppendUint32(nil, uint32(len(prvw)))...)
	pv = append(pv, prvw...)
	prev := append([]byte("\xea\xf4\x2b\x5e\x1c\x98\x4b\x88\xb9\xfb\xb7\xdc\x40\x6e\x4d\x16"),
		append(make([]byte, 8), bmffBox("PRVW", pv)...)...)
	var out []byte
	out = append(out, bmffBox("ftyp", []byte("crx \x00\x00\x00\x01crx isom"))...)
	out = append(out, bmffBox("moov", bmffBox("uuid", canon))...)
	out = append(out, bmffBox("uuid", prev)...)
	out = append(out, bmffBox("mdat", make([]byte, 64))...)
	return out
}

// TestRAWPreview decodes each built RAW through its largest preview, with
// the RAW's own orientation.
func TestRAWPreview(t *testing.T) {
	for _, c := range rawCases(t) {
		t.Run(c.name, func(t *testing.T) {
			f, kind := sniff(c.data, c.file)
			if f != fmtRAW {
				t.Fatalf("sniffed %v %q, want camera RAW", f, kind)
			}
			img, _, err := decodeImage(c.data, c.file, DefaultMaxPixels)
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != c.w || b.Dy() != c.h {
				t.Errorf("decoded %dx%d, want the %dx%d preview", b.Dx(), b.Dy(), c.w, c.h)
			}
			want := c.orient
			if want == 0 {
				want = 1
			}
			if o := exifOrientation(c.data, fmtRAW); o != want {
				t.Errorf("orientation %d, want %d", o, want)
			}
			out, err := New(DefaultConfig(), Options{}).Bytes(c.data, c.file)
			if err != nil || len(out) != 3*224*224 {
				t.Errorf("Bytes: %d values, error %v", len(out), err)
			}
		})
	}
}

// TestRAWOrientationFallback: a RAW without its own Orientation uses the
// preview's EXIF (RAF has no TIFF of its own).
func TestRAWOrientationFallback(t *testing.T) {
	jpg := rawTestJPEG(t, 64, 48, 9)
	// Insert an APP1 Exif segment with orientation 5 after SOI.
	le := binary.LittleEndian
	tiff := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffShort(le, 0x0112, 5)}}}, nil)
	seg := append([]byte("Exif\x00\x00"), tiff...)
	app1 := append([]byte{0xff, 0xe1}, binary.BigEndian.AppendUint16(nil, uint16(len(seg)+2))...)
	jpg = append(append(append([]byte{}, jpg[:2]...), append(app1, seg...)...), jpg[2:]...)
	if o := exifOrientation(buildRAF(jpg), fmtRAW); o != 5 {
		t.Errorf("RAF orientation %d, want 5 from the preview", o)
	}
	// A DNG that says 2 wins over the preview's 5.
	dng := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, uint32(len(jpg))), tiffShort(le, 0x0112, 2)}}}, [][]byte{jpg})
	if o := exifOrientation(dng, fmtRAW); o != 2 {
		t.Errorf("DNG orientation %d, want its own 2", o)
	}
}

// TestRAWHostile: broken and malicious RAW files give clear per-file
// errors with bounded work and memory.
func TestRAWHostile(t *testing.T) {
	le := binary.LittleEndian
	big := rawTestJPEG(t, 480, 320, 3)
	n := uint32(len(big))
	loop := tiffBuild(le, "*\x00", []tIFD{
		{entries: []tEntry{tiffIFDAt(0x014a, 1), tiffIFDAt(0x8769, 2)}, next: 2},
		{entries: []tEntry{tiffIFDAt(0x014a, 1)}, next: 1},
	}, nil)
	pastEnd := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffLong(le, 0x0201, 1<<30), tiffLong(le, 0x0202, n)}}}, nil)
	hugeLen := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, 0xffffffff)}}}, [][]byte{big})
	hugeCount := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{{tag: 0x014a, typ: 4, count: 1 << 30, val: []byte{8, 0, 0, 0}}}}}, nil)
	manyEntries := bytes.Clone(loop)
	le.PutUint16(manyEntries[8:], 0xffff)
	onlyRaw := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffShort(le, 0x0103, 7), tiffBlobAt(0x0111, 1), tiffLong(le, 0x0117, 17)}}}, [][]byte{rawLosslessJPEG(6000, 4000)})
	hugePreview := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, uint32(len(jpegHeader(65000, 65000))))}}}, [][]byte{jpegHeader(65000, 65000)})
	cut := tiffBuild(le, "*\x00", []tIFD{{entries: []tEntry{tiffBlobAt(0x0201, 1), tiffLong(le, 0x0202, n/2)}}}, [][]byte{big[:n/2]})
	raf := buildRAF(big)
	binary.BigEndian.PutUint32(raf[84:], 0xfffffff0)
	cr3 := buildCR3(t, big, big, 1)
	binary.BigEndian.PutUint32(cr3[24:], 0x7fffffff) // moov size past the end
	for _, tc := range []struct {
		name, file string
		data       []byte
		want       error
		text       string
	}{
		{"ifd loop", "loop.dng", loop, ErrUnsupported, "no embedded JPEG preview"},
		{"offset past end", "a.nef", pastEnd, ErrUnsupported, "no embedded JPEG preview"},
		{"length past end", "a.nef", hugeLen, ErrUnsupported, "Nikon NEF"},
		{"huge SubIFD count", "a.arw", hugeCount, ErrUnsupported, "Sony ARW"},
		{"65535 entries", "a.pef", manyEntries, ErrUnsupported, "Pentax PEF"},
		{"lossless only", "a.dng", onlyRaw, ErrUnsupported, "no embedded JPEG preview"},
		{"preview over the pixel limit", "a.nef", hugePreview, ErrTooLarge, "65000x65000"},
		{"truncated preview", "a.nef", cut, ErrCorrupt, "Nikon NEF embedded preview"},
		{"raf offset past end", "a.raf", raf, ErrUnsupported, "Fujifilm RAF"},
		{"cr3 box past end", "a.cr3", cr3, ErrUnsupported, "Canon CR3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			a := bytesAllocated(func() { _, err = New(DefaultConfig(), Options{}).Bytes(tc.data, tc.file) })
			checkRefused(t, err, tc.want, tc.file, tc.text, a)
		})
	}
}

// FuzzRAWPreview: the preview finder on arbitrary bytes returns a JPEG
// inside the input or an error, never panics.
func FuzzRAWPreview(f *testing.F) {
	for _, c := range rawCases(f) {
		f.Add(c.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := findRAWPreview(data)
		if err == nil {
			if len(p.jpeg) < 4 || p.w <= 0 || p.h <= 0 {
				t.Fatalf("preview %dx%d of %d bytes", p.w, p.h, len(p.jpeg))
			}
		}
		if o := rawOrientation(data); o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
	})
}
