package preprocess

import (
	"bytes"
	"encoding/binary"
)

// This file finds the EXIF orientation tag (0x0112) the way Pillow's
// getexif() does for ImageOps.exif_transpose: in the first JPEG APP1
// segment that starts with "Exif\0\0", in a PNG eXIf chunk, in a WebP EXIF
// chunk, or in IFD0 of a TIFF file. Every read is bounds-checked; anything
// malformed means "no orientation" (1), never an error: the pixels are still
// good.

const tagOrientation = 0x0112

// exifOrientation returns the orientation 1..8 recorded in data of the
// given format, or 1 when there is none or it is out of range.
func exifOrientation(data []byte, f format) int {
	var tiff []byte
	switch f {
	case fmtRAW:
		return rawOrientation(data)
	case fmtHEIC, fmtAVIF:
		return 1 // EXIF is ignored; heif.go applies irot/imir when decoding
	case fmtJPEG:
		tiff = jpegExif(data)
	case fmtPNG:
		tiff = pngExif(data)
	case fmtWebP:
		tiff = webpExif(data)
	case fmtTIFF:
		tiff = data
	}
	o := tiffOrientation(tiff)
	if o < 1 || o > 8 {
		return 1
	}
	return o
}

var exifHeader = []byte("Exif\x00\x00")

// jpegExif walks the JPEG marker segments before the first scan and returns
// the TIFF block of the first APP1 Exif segment.
func jpegExif(d []byte) []byte {
	if len(d) < 4 || d[0] != 0xff || d[1] != 0xd8 {
		return nil
	}
	i := 2
	for i+4 <= len(d) {
		if d[i] != 0xff {
			return nil
		}
		m := d[i+1]
		switch {
		case m == 0xff: // fill byte
			i++
			continue
		case m == 0xd8 || m == 0x01 || (m >= 0xd0 && m <= 0xd7):
			i += 2 // markers without a length
			continue
		case m == 0xda || m == 0xd9: // start of scan, end of image
			return nil
		}
		n := int(binary.BigEndian.Uint16(d[i+2:]))
		if n < 2 || i+2+n > len(d) {
			return nil
		}
		seg := d[i+4 : i+2+n]
		if m == 0xe1 && bytes.HasPrefix(seg, exifHeader) {
			return seg[len(exifHeader):]
		}
		i += 2 + n
	}
	return nil
}

// pngExif returns the contents of the eXIf chunk (some writers prefix it
// with "Exif\0\0", which Pillow tolerates too).
func pngExif(d []byte) []byte {
	const sig = 8
	if len(d) < sig {
		return nil
	}
	for i := sig; i+8 <= len(d); {
		n := int64(binary.BigEndian.Uint32(d[i:]))
		typ := string(d[i+4 : i+8])
		end := int64(i) + 12 + n
		if n > int64(len(d)) || end > int64(len(d)) {
			return nil
		}
		if typ == "eXIf" {
			return bytes.TrimPrefix(d[i+8:i+8+int(n)], exifHeader)
		}
		if typ == "IEND" {
			return nil
		}
		i = int(end)
	}
	return nil
}

// webpExif returns the contents of the EXIF chunk of a RIFF WebP file.
func webpExif(d []byte) []byte {
	if len(d) < 12 {
		return nil
	}
	for i := 12; i+8 <= len(d); {
		n := int64(binary.LittleEndian.Uint32(d[i+4:]))
		if n > int64(len(d)) || int64(i)+8+n > int64(len(d)) {
			return nil
		}
		if string(d[i:i+4]) == "EXIF" {
			return bytes.TrimPrefix(d[i+8:i+8+int(n)], exifHeader)
		}
		i += 8 + int(n) + int(n&1) // chunks are padded to even sizes
	}
	return nil
}

// tiffOrientation reads tag 0x0112 from IFD0 of a TIFF block, or returns 0.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > int64(len(t)) {
		return 0
	}
	n := int64(bo.Uint16(t[off:]))
	for k := int64(0); k < n; k++ {
		e := off + 2 + 12*k
		if e+12 > int64(len(t)) {
			return 0
		}
		if bo.Uint16(t[e:]) != tagOrientation {
			continue
		}
		typ, count := bo.Uint16(t[e+2:]), bo.Uint32(t[e+4:])
		if count < 1 {
			return 0
		}
		switch typ {
		case 3: // SHORT, stored in the first two bytes of the value field
			return int(bo.Uint16(t[e+8:]))
		case 4: // LONG
			if v := bo.Uint32(t[e+8:]); v <= 8 {
				return int(v)
			}
		case 1: // BYTE
			return int(t[e+8])
		}
		return 0
	}
	return 0
}
