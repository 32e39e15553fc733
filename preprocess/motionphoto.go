package preprocess

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"io"
	"strconv"
)

// Motion Photos. FindMotionVideo finds the video an Android Motion
// Photo carries: a JPEG or HEIC still with a short MP4 appended to it,
// which Google's Camera (Pixel "Motion", "Top Shot"), Samsung's ("Motion
// photo") and others write as one file. The still is the photo as any viewer shows
// it; the video is the seconds around it.
//
// The layouts read:
//
//   - Google's Motion Photo format 1.0 (and Samsung's newer phones): the
//     JPEG's XMP lists a Container:Directory whose items are the still
//     (Semantic "Primary") and the files appended after it, each with its
//     Item:Length; the video is the item of Semantic "MotionPhoto", at
//     the lengths of it and of the items after it from the end of the
//     file.
//   - Google's earlier MicroVideo (MVIMG_*.jpg): GCamera:MicroVideoOffset,
//     the video's length from the end of the file.
//   - Samsung's JPEGs: the marker "MotionPhoto_Data" after the image, then
//     the video, then Samsung's own trailer, which ends with "SEFT" (the
//     marker is looked for only in a file that ends so: any other JPEG is
//     told apart by its last bytes, not read whole).
//   - HEIC: a top-level "mpvd" box holding the video, which keeps the
//     file one ISO BMFF file (an MP4 appended bare, a second "ftyp" box,
//     is a file libheif refuses to read).
//
// Whatever says where the video is, it is taken only when the bytes there
// are an MP4 (an ftyp box first, a moov box among boxes that fill the
// range): an editor that kept the XMP but dropped the video, or a stray
// marker, finds nothing.

// motionMaxHeader bounds what is read of a JPEG's segments for its XMP.
const motionMaxHeader = 4 << 20

// motionSamsungTail bounds how far from the end of a JPEG the Samsung marker is
// looked for.
const motionSamsungTail = 256 << 20

// MotionVideo is the byte range of a Motion Photo's video within its file, and
// whether its ftyp names a QuickTime brand (else MP4).
type MotionVideo struct {
	Off, Len  int64
	QuickTime bool
}

// FindMotionVideo returns the video the file r (of size bytes) carries, ok false when
// it is no Motion Photo (or its video is gone, or cannot be read).
func FindMotionVideo(r io.ReaderAt, size int64) (v MotionVideo, ok bool) {
	var head [12]byte
	if size < int64(len(head)) {
		return v, false
	}
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return v, false
	}
	switch {
	case head[0] == 0xFF && head[1] == 0xD8:
		return motionJPEG(r, size)
	case string(head[4:8]) == "ftyp":
		return motionHEIF(r, size)
	}
	return v, false
}

func motionJPEG(r io.ReaderAt, size int64) (MotionVideo, bool) {
	if hdr, err := MetaBytes(r, size, motionMaxHeader); err == nil {
		for _, sp := range motionSpans(motionXMP(hdr)) {
			if sp.tail > 0 && sp.tail < size {
				if v, ok := motionMP4At(r, size-sp.tail, sp.n, size); ok {
					return v, true
				}
			}
		}
	}
	return motionSamsung(r, size)
}

// motionXMP returns the XMP packet of a JPEG's segments (the APP1 segment of
// Adobe's namespace), nil when there is none.
func motionXMP(hdr []byte) []byte {
	const ns = "http://ns.adobe.com/xap/1.0/\x00"
	for from := 0; ; {
		i := bytes.Index(hdr[from:], []byte(ns))
		if i < 0 {
			return nil
		}
		i += from
		if i >= 4 && hdr[i-4] == 0xFF && hdr[i-3] == 0xE1 {
			n := int(binary.BigEndian.Uint16(hdr[i-2:]))
			end := i - 2 + n
			if n >= 2+len(ns) && end <= len(hdr) {
				return hdr[i+len(ns) : end]
			}
		}
		from = i + len(ns)
	}
}

const (
	nsGCamera    = "http://ns.google.com/photos/1.0/camera/"
	nsGContainer = "http://ns.google.com/photos/1.0/container/"
	nsGItem      = "http://ns.google.com/photos/1.0/container/item/"
)

// motionSpan is where an XMP packet says a Motion Photo's video is: tail bytes
// from the end of the file, n bytes long.
type motionSpan struct{ tail, n int64 }

// motionSpans reads from an XMP packet where a Motion Photo's video may be:
// from the container directory (the MotionPhoto item, followed by the
// items after it), then from a MicroVideoOffset (the video runs to the
// end). Attributes and elements are both read, as XMP allows either.
func motionSpans(x []byte) []motionSpan {
	if len(x) == 0 {
		return nil
	}
	type item struct {
		semantic string
		length   int64
	}
	var (
		items  []item
		micro  int64
		inItem bool
		field  string // the Item: or GCamera: element whose text comes
		text   []byte
	)
	set := func(space, local, val string) {
		switch {
		case space == nsGItem && inItem && local == "Semantic":
			items[len(items)-1].semantic = val
		case space == nsGItem && inItem && local == "Length":
			items[len(items)-1].length, _ = strconv.ParseInt(val, 10, 64)
		case space == nsGCamera && local == "MicroVideoOffset":
			micro, _ = strconv.ParseInt(val, 10, 64)
		}
	}
	d := xml.NewDecoder(bytes.NewReader(x))
	d.Strict = false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space == nsGContainer && t.Name.Local == "Item" {
				inItem = true
				items = append(items, item{})
			}
			for _, a := range t.Attr {
				set(a.Name.Space, a.Name.Local, a.Value)
			}
			field, text = t.Name.Space+"\x00"+t.Name.Local, text[:0]
		case xml.CharData:
			text = append(text, t...)
		case xml.EndElement:
			if field == t.Name.Space+"\x00"+t.Name.Local {
				set(t.Name.Space, t.Name.Local, string(bytes.TrimSpace(text)))
			}
			field = ""
			if t.Name.Space == nsGContainer && t.Name.Local == "Item" {
				inItem = false
			}
		}
	}
	var out []motionSpan
	for i, it := range items {
		if it.semantic != "MotionPhoto" || it.length <= 0 {
			continue
		}
		var tail int64
		for _, after := range items[i:] {
			tail += max(after.length, 0)
		}
		out = append(out, motionSpan{tail, it.length})
	}
	if micro > 0 {
		out = append(out, motionSpan{micro, micro})
	}
	return out
}

// motionSamsung finds the video after Samsung's "MotionPhoto_Data" marker,
// searched for from the end of the file (in its last motionSamsungTail bytes).
func motionSamsung(r io.ReaderAt, size int64) (MotionVideo, bool) {
	const marker = "MotionPhoto_Data"
	const chunk = 1 << 20
	var tail [4]byte
	if _, err := r.ReadAt(tail[:], size-4); err != nil || string(tail[:]) != "SEFT" {
		return MotionVideo{}, false
	}
	end := size
	for end > 0 && size-end < motionSamsungTail {
		start := max(end-chunk, 0)
		buf := make([]byte, end-start+int64(len(marker))-1)
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-start)], start)
		if err != nil && err != io.EOF {
			return MotionVideo{}, false
		}
		// Samsung's trailer names its entries, this marker among them:
		// each place it occurs is tried, from the last.
		for b := buf[:n]; ; {
			i := bytes.LastIndex(b, []byte(marker))
			if i < 0 {
				break
			}
			if v, ok := motionMP4At(r, start+int64(i)+int64(len(marker)), -1, size); ok {
				return v, true
			}
			b = b[:i]
		}
		end = start
	}
	return MotionVideo{}, false
}

func motionHEIF(r io.ReaderAt, size int64) (MotionVideo, bool) {
	var hdr [16]byte
	for off := int64(0); off+8 <= size; {
		typ, n, hlen, ok := motionBox(r, off, size, hdr[:])
		if !ok {
			return MotionVideo{}, false
		}
		if typ == "mpvd" {
			return motionMP4At(r, off+hlen, n-hlen, off+n)
		}
		off += n
	}
	return MotionVideo{}, false
}

// motionBox reads the header of the motionBox at off (within a range ending at end):
// its type, its whole size and its header's size.
func motionBox(r io.ReaderAt, off, end int64, hdr []byte) (typ string, n, hlen int64, ok bool) {
	if _, err := r.ReadAt(hdr[:8], off); err != nil {
		return "", 0, 0, false
	}
	n, hlen, typ = int64(binary.BigEndian.Uint32(hdr)), 8, string(hdr[4:8])
	switch n {
	case 0:
		n = end - off
	case 1:
		if off+16 > end {
			return "", 0, 0, false
		}
		if _, err := r.ReadAt(hdr[8:16], off+8); err != nil {
			return "", 0, 0, false
		}
		n, hlen = int64(binary.BigEndian.Uint64(hdr[8:])), 16
	}
	for _, c := range []byte(typ) {
		if c < 0x20 || c > 0x7e {
			return "", 0, 0, false
		}
	}
	if n < hlen || off+n > end {
		return "", 0, 0, false
	}
	return typ, n, hlen, true
}

// motionMP4At checks that the bytes at off are an MP4 of length n (n < 0: as
// long as its boxes go, the file ending at end): an ftyp motionBox first, then
// boxes that fill it, a moov among them.
func motionMP4At(r io.ReaderAt, off, n, end int64) (MotionVideo, bool) {
	limit := end
	if n >= 0 {
		limit = off + n
	}
	if off < 0 || limit > end || off >= limit {
		return MotionVideo{}, false
	}
	var hdr [16]byte
	var v MotionVideo
	moov := false
	at := off
	for at < limit {
		typ, bn, _, ok := motionBox(r, at, limit, hdr[:])
		if !ok {
			if n >= 0 || at == off {
				return MotionVideo{}, false
			}
			break // the end of the video: a trailer follows
		}
		if at == off {
			if typ != "ftyp" {
				return MotionVideo{}, false
			}
			var brand [4]byte
			if _, err := r.ReadAt(brand[:], at+8); err == nil {
				v.QuickTime = string(brand[:]) == "qt  "
			}
		}
		moov = moov || typ == "moov"
		at += bn
	}
	if !moov {
		return MotionVideo{}, false
	}
	v.Off, v.Len = off, at-off
	return v, true
}
