package preprocess

import (
	"bytes"
	"encoding/binary"
	"image"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file reads what a photo says of when, where and with what it was
// taken, without decoding a pixel: the EXIF block of a JPEG (APP1), PNG
// (eXIf), WebP (EXIF), TIFF or TIFF-based RAW (the file itself), HEIC or
// AVIF (the Exif item, located through iinf and iloc) and CR3 (CMT1, CMT2,
// CMT4), read with the IFD reader of raw.go; a RAF's through its JPEG
// preview. Everything is bounds-checked; a malformed or missing tag is
// absent, never an error.

// Meta is the capture metadata of one image file. The zero value means
// nothing was found.
type Meta struct {
	// Taken is DateTimeOriginal as the camera's clock showed it, with
	// SubSecTimeOriginal, in the UTC location (the wall clock, not an
	// instant); where it is absent or unreadable, DateTimeDigitized
	// (exiftool's CreateDate, which scanners and some phones and editors
	// write alone) with SubSecTimeDigitized; zero when neither is there.
	Taken time.Time
	// Offset is OffsetTimeOriginal (OffsetTimeDigitized with
	// DateTimeDigitized) in minutes east of UTC, when HasOffset.
	Offset    int
	HasOffset bool
	// GPS position in WGS84 degrees (south and west negative) and metres
	// (below sea level negative).
	HasGPS   bool
	Lat, Lon float64
	HasAlt   bool
	Alt      float64
	// Make, Model and LensModel, trimmed.
	Make, Model, Lens string
	// Width and Height are the pixel size as displayed (after the
	// orientation); 0 when the header cannot tell.
	Width, Height int
	// ContentID is the content identifier of an iPhone's Apple MakerNote
	// (tag 0x0011), which a Live Photo's movie carries too
	// (com.apple.quicktime.content.identifier); "" when absent.
	ContentID string
}

// EXIF tags read (IFD0, EXIF IFD, GPS IFD).
const (
	tagMake         = 0x010f
	tagModel        = 0x0110
	tagExifIFD      = 0x8769
	tagGPSIFD       = 0x8825
	tagDateOriginal = 0x9003
	tagDateDigit    = 0x9004
	tagOffsetOrig   = 0x9011
	tagOffsetDigit  = 0x9012
	tagSubSecOrig   = 0x9291
	tagSubSecDigit  = 0x9292
	tagLensModel    = 0xa434
	tagMakerNote    = 0x927c
)

// ReadMeta returns the capture metadata of an image file's bytes.
func ReadMeta(data []byte) Meta {
	var m Meta
	f, _ := sniff(data, "")
	var tiffs [][]byte // EXIF blocks, read in order; the first value found wins
	switch f {
	case fmtJPEG:
		tiffs = append(tiffs, jpegExif(data))
	case fmtPNG:
		tiffs = append(tiffs, pngExif(data))
	case fmtWebP:
		tiffs = append(tiffs, webpExif(data))
	case fmtTIFF:
		tiffs = append(tiffs, data)
	case fmtHEIC, fmtAVIF:
		tiffs = append(tiffs, heifExif(data))
	case fmtRAW:
		switch {
		case len(data) >= 12 && string(data[4:8]) == "ftyp":
			tiffs = append(tiffs, cr3Exif(data)...)
		case len(data) >= 15 && string(data[:15]) == "FUJIFILMCCD-RAW":
			if p, err := findRAWPreview(data); err == nil {
				tiffs = append(tiffs, jpegExif(p.jpeg))
			}
		default:
			tiffs = append(tiffs, data)
		}
	}
	var digitized Meta // DateTimeDigitized: Taken and Offset where no block has DateTimeOriginal
	for _, t := range tiffs {
		readEXIF(t, &m, &digitized)
	}
	if m.Taken.IsZero() {
		m.Taken, m.Offset, m.HasOffset = digitized.Taken, digitized.Offset, digitized.HasOffset
	}
	m.Width, m.Height = displaySize(data, f)
	return m
}

// displaySize is the pixel size of the image as displayed.
func displaySize(data []byte, f format) (int, int) {
	var w, h int
	switch f {
	case fmtJPEG:
		w, h, _ = jpegFrameSize(data)
	case fmtRAW:
		p, err := findRAWPreview(data)
		if err != nil {
			return 0, 0
		}
		w, h = p.w, p.h
		if cw, ch, ok := dngCropSize(data); ok {
			w, h = cw, ch // a DNG says what its developed picture measures
		}
	case fmtHEIC, fmtAVIF:
		info, err := parseHEIF(data)
		if err != nil {
			return 0, 0
		}
		return orientDims(info.w, info.h, info.orient)
	default:
		dec, ok := decoders[f]
		if !ok {
			return 0, 0
		}
		cfg, err := safely(func() (image.Config, error) { return dec.config(bytes.NewReader(data)) })
		if err != nil {
			return 0, 0
		}
		w, h = cfg.Width, cfg.Height
	}
	return orientDims(w, h, exifOrientation(data, f))
}

// jpegFrameSize reads the size from a JPEG's frame header, whatever its
// coding (jpegPictureSize accepts only the codings a preview may use).
func jpegFrameSize(j []byte) (w, h int, ok bool) {
	w, h, _, ok = jpegFrame(j)
	return w, h, ok
}

// readEXIF fills the fields of m still empty from a TIFF-structured EXIF
// block: IFD0, its EXIF IFD and its GPS IFD; and the Taken and Offset of
// dig from DateTimeDigitized, for when no block has DateTimeOriginal.
func readEXIF(t []byte, m, dig *Meta) {
	w, err := newTIFFWalker(t)
	if err != nil || w.ifd0 == 0 {
		return
	}
	ifd0, _, ok := w.entries(0, uint64(w.ifd0))
	if !ok {
		return
	}
	var exif, gps []tiffEntry
	for _, e := range ifd0 {
		switch e.tag {
		case tagMake:
			setStr(&m.Make, w.ascii(e))
		case tagModel:
			setStr(&m.Model, w.ascii(e))
		case tagExifIFD:
			if off, ok := w.uint(e, 0); ok {
				exif, _, _ = w.entries(0, off)
			}
		case tagGPSIFD:
			if off, ok := w.uint(e, 0); ok {
				gps, _, _ = w.entries(0, off)
			}
		}
	}
	var date, offset, subsec, dDate, dOffset, dSubsec string
	for _, e := range exif {
		switch e.tag {
		case tagDateOriginal:
			date = w.ascii(e)
		case tagOffsetOrig:
			offset = w.ascii(e)
		case tagSubSecOrig:
			subsec = w.ascii(e)
		case tagDateDigit:
			dDate = w.ascii(e)
		case tagOffsetDigit:
			dOffset = w.ascii(e)
		case tagSubSecDigit:
			dSubsec = w.ascii(e)
		case tagLensModel:
			setStr(&m.Lens, w.ascii(e))
		case tagMakerNote:
			setStr(&m.ContentID, appleContentID(e.val))
		}
	}
	setTaken(m, date, subsec, offset)
	setTaken(dig, dDate, dSubsec, dOffset)
	if !m.HasGPS {
		readGPS(w, gps, m)
	}
}

// appleContentID reads the content identifier (tag 0x0011, ASCII) of an
// Apple MakerNote: "Apple iOS\0", a version (2 bytes), "MM", then an IFD
// whose offsets count from the MakerNote's start, always big-endian.
// "" for any other MakerNote.
func appleContentID(mn []byte) string {
	if len(mn) < 16 || string(mn[:10]) != "Apple iOS\x00" || string(mn[12:14]) != "MM" {
		return ""
	}
	w := &tiffWalker{d: mn, bo: binary.BigEndian, seen: map[uint64]bool{}}
	es, _, _ := w.entries(0, 14)
	for _, e := range es {
		if e.tag == 0x0011 {
			return w.ascii(e)
		}
	}
	return ""
}

// setTaken sets m's Taken and Offset from an EXIF date, its sub-seconds
// and its offset, unless m has a Taken already or the date is unreadable.
func setTaken(m *Meta, date, subsec, offset string) {
	if !m.Taken.IsZero() {
		return
	}
	if tm, ok := exifTime(date, subsec); ok {
		m.Taken = tm
		if o, ok := exifOffset(offset); ok {
			m.Offset, m.HasOffset = o, true
		}
	}
}

func setStr(dst *string, s string) {
	if *dst == "" {
		*dst = s
	}
}

// ascii reads an ASCII (or UNDEFINED) value up to its first NUL, trimmed.
func (t *tiffWalker) ascii(e tiffEntry) string {
	if e.typ != 2 && e.typ != 7 {
		return ""
	}
	v := e.val
	if i := bytes.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(string(v))
}

// rational reads the i-th RATIONAL or SRATIONAL of an entry.
func (t *tiffWalker) rational(e tiffEntry, i int) (float64, bool) {
	if (e.typ != 5 && e.typ != 10) || len(e.val) < 8*(i+1) {
		return 0, false
	}
	n, d := t.bo.Uint32(e.val[8*i:]), t.bo.Uint32(e.val[8*i+4:])
	if d == 0 {
		return 0, false
	}
	if e.typ == 10 {
		return float64(int32(n)) / float64(int32(d)), true
	}
	return float64(n) / float64(d), true
}

// readGPS reads latitude, longitude and altitude with their references.
func readGPS(w *tiffWalker, gps []tiffEntry, m *Meta) {
	var latRef, lonRef string
	var lat, lon []float64
	altRef := -1
	alt, hasAlt := 0.0, false
	for _, e := range gps {
		switch e.tag {
		case 1:
			latRef = w.ascii(e)
		case 2:
			lat = w.dms(e)
		case 3:
			lonRef = w.ascii(e)
		case 4:
			lon = w.dms(e)
		case 5: // a BYTE by the standard; some writers store a SHORT or UNDEFINED
			if (e.typ == 1 || e.typ == 6 || e.typ == 7) && len(e.val) >= 1 {
				altRef = int(e.val[0])
			} else if v, ok := w.uint(e, 0); ok {
				altRef = int(v)
			}
		case 6:
			alt, hasAlt = w.rational(e, 0)
		}
	}
	if lat == nil || lon == nil {
		return
	}
	la, lo := lat[0]+lat[1]/60+lat[2]/3600, lon[0]+lon[1]/60+lon[2]/3600
	// The references by their first letter in any case, as exiftool
	// reads them ("S", "s", "South").
	if refIs(latRef, 'S') {
		la = -la
	}
	if refIs(lonRef, 'W') {
		lo = -lo
	}
	if math.IsNaN(la) || math.IsNaN(lo) || math.Abs(la) > 90 || math.Abs(lo) > 180 {
		return
	}
	m.HasGPS, m.Lat, m.Lon = true, la, lo
	if hasAlt && !math.IsNaN(alt) && !math.IsInf(alt, 0) {
		if altRef == 1 {
			alt = -alt
		}
		m.HasAlt, m.Alt = true, alt
	}
}

// refIs reports whether a GPS reference starts with the letter c (upper
// case), in either case, after any spaces.
func refIs(ref string, c byte) bool {
	ref = strings.TrimLeft(ref, " ")
	return ref != "" && (ref[0] == c || ref[0] == c+'a'-'A')
}

// dms reads degrees, minutes and seconds (missing trailing parts are 0).
func (t *tiffWalker) dms(e tiffEntry) []float64 {
	out := make([]float64, 3)
	n := 0
	for i := 0; i < 3 && i < int(e.count); i++ {
		v, ok := t.rational(e, i)
		if !ok {
			break
		}
		out[i] = v
		n++
	}
	if n == 0 {
		return nil
	}
	return out
}

// exifTime parses "YYYY:MM:DD HH:MM:SS" (dashes and a T tolerated) and the
// SubSecTime digits, as a wall clock in UTC. An impossible date or time
// (month 13, February 30, 24:00:00, a leap second) is absent, as no date
// is, rather than rolled over into a real one.
func exifTime(s, subsec string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 19 {
		return time.Time{}, false
	}
	num := func(a, b int) int {
		n, err := strconv.Atoi(s[a:b])
		if err != nil {
			return -1
		}
		return n
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), num(17, 19)
	if y < 1 || min(mo, d, h, mi, sec) < 0 {
		return time.Time{}, false // includes the "0000:00:00 00:00:00" of cameras without a clock
	}
	ns := 0
	if digits := strings.TrimSpace(subsec); digits != "" {
		for i, c := range digits {
			if c < '0' || c > '9' {
				ns = 0
				break
			}
			if i < 9 {
				ns += int(c-'0') * int(math.Pow10(8-i))
			}
		}
	}
	tm := time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	if tm.Year() != y || tm.Month() != time.Month(mo) || tm.Day() != d || tm.Hour() != h || tm.Minute() != mi || tm.Second() != sec {
		return time.Time{}, false // time.Date normalised an impossible date or time: February 30 is not March 2
	}
	return tm, true
}

// exifOffset parses "+HH:MM" or "-HH:MM" into minutes.
func exifOffset(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, false
	}
	h, err1 := strconv.Atoi(s[1:3])
	m, err2 := strconv.Atoi(s[4:6])
	if err1 != nil || err2 != nil || h > 18 || m > 59 {
		return 0, false
	}
	o := h*60 + m
	if s[0] == '-' {
		o = -o
	}
	return o, true
}

// heifExif returns the TIFF block of the Exif item of a HEIF or AVIF file:
// its extent from iloc (in the file, or in idat), after the 4-byte offset
// to the TIFF header that the item starts with.
func heifExif(d []byte) []byte {
	meta, err := bmffFind(d, "meta")
	if err != nil || len(meta) < 4 {
		return nil
	}
	var iinf, iloc, idat []byte
	err = bmffBoxes(meta[4:], func(t string, body []byte) error {
		switch t {
		case "iinf":
			iinf = body
		case "iloc":
			iloc = body
		case "idat":
			idat = body
		}
		return nil
	})
	if err != nil {
		return nil
	}
	types := map[uint32]string{}
	if parseIINF(iinf, types) != nil {
		return nil
	}
	var id uint32
	found := false
	for k, t := range types {
		if t == "Exif" && (!found || k < id) {
			id, found = k, true
		}
	}
	if !found {
		return nil
	}
	item := ilocExtent(iloc, id, d, idat)
	if len(item) < 4 {
		return nil
	}
	skip := uint64(binary.BigEndian.Uint32(item))
	if skip > uint64(len(item))-4 {
		return nil
	}
	return item[4+skip:]
}

// ilocExtent returns the bytes of item id as iloc places them (the first
// extent only: an Exif item is one extent in practice), or nil.
func ilocExtent(b []byte, id uint32, file, idat []byte) []byte {
	if len(b) < 8 {
		return nil
	}
	version := b[0]
	offSize, lenSize, baseSize := int(b[4]>>4), int(b[4]&15), int(b[5]>>4)
	idxSize := 0
	if version == 1 || version == 2 {
		idxSize = int(b[5] & 15)
	}
	p := 6
	read := func(n int) (uint64, bool) {
		if n != 0 && n != 2 && n != 4 && n != 8 || p+n > len(b) {
			return 0, false
		}
		var v uint64
		for i := 0; i < n; i++ {
			v = v<<8 | uint64(b[p+i])
		}
		p += n
		return v, true
	}
	idSize := 2 // item ids and the item count: 16 bits, 32 from version 2
	if version >= 2 {
		idSize = 4
	}
	count, ok := read(idSize)
	if !ok {
		return nil
	}
	for k := uint64(0); k < count && k < maxHEIFItems; k++ {
		itemID, ok := read(idSize)
		if !ok {
			return nil
		}
		method := 0
		if version == 1 || version == 2 {
			if p+2 > len(b) {
				return nil
			}
			method, p = int(b[p+1]&15), p+2
		}
		if p+2 > len(b) {
			return nil
		}
		p += 2 // data reference index
		base, ok1 := read(baseSize)
		if p+2 > len(b) || !ok1 {
			return nil
		}
		n := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		var first []byte
		for e := 0; e < n; e++ {
			if _, ok := read(idxSize); !ok {
				return nil
			}
			off, ok2 := read(offSize)
			ln, ok3 := read(lenSize)
			if !ok2 || !ok3 {
				return nil
			}
			if e == 0 {
				src := file
				if method == 1 {
					src = idat
				} else if method != 0 {
					return nil
				}
				start := base + off
				if start > uint64(len(src)) || ln > uint64(len(src))-start {
					return nil
				}
				if ln == 0 {
					ln = uint64(len(src)) - start
				}
				first = src[start : start+ln]
			}
		}
		if uint32(itemID) == id {
			return first
		}
	}
	return nil
}

// cr3Exif returns the TIFF blocks of a CR3 file: CMT1 (IFD0), CMT2 (the
// EXIF IFD, laid out as a TIFF of its own) and CMT4 (GPS), the latter two
// wrapped so readEXIF finds them where IFD0 would point.
func cr3Exif(d []byte) [][]byte {
	var out [][]byte
	var walk func(b []byte, depth int)
	walk = func(b []byte, depth int) {
		if depth > 3 {
			return
		}
		_ = bmffBoxes(b, func(typ string, body []byte) error {
			switch typ {
			case "moov":
				walk(body, depth+1)
			case "uuid":
				walk(body, depth+1)
			case "CMT1":
				out = append(out, body)
			case "CMT2":
				out = append(out, asSubIFD(body, tagExifIFD))
			case "CMT4":
				out = append(out, asSubIFD(body, tagGPSIFD))
			}
			return nil
		})
	}
	walk(d, 0)
	return out
}

// asSubIFD makes a TIFF whose IFD0 points at the IFD0 of t through tag,
// for the CR3 blocks that hold the EXIF or GPS IFD as their first IFD.
func asSubIFD(t []byte, tag uint16) []byte {
	if len(t) < 8 {
		return nil
	}
	w, err := newTIFFWalker(t)
	if err != nil {
		return nil
	}
	// The new IFD0 goes after t: 1 entry, pointing at t's first IFD.
	out := append([]byte(nil), t...)
	at := uint32(len(out))
	ifd := make([]byte, 18)
	w.bo.PutUint16(ifd, 1)
	w.bo.PutUint16(ifd[2:], tag)
	w.bo.PutUint16(ifd[4:], 4)
	w.bo.PutUint32(ifd[6:], 1)
	w.bo.PutUint32(ifd[10:], w.ifd0)
	out = append(out, ifd...)
	w.bo.PutUint32(out[4:], at)
	return out
}
