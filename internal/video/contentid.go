package video

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ContentIDKey is the QuickTime metadata key under which an iPhone writes
// the identifier that pairs a Live Photo's movie with its still (the
// still carries the same string in its Apple MakerNote).
const ContentIDKey = "com.apple.quicktime.content.identifier"

// Limits of ContentID's reading: a movie box larger than maxMoov is not
// read (an iPhone's is tens of kilobytes; a long film's sample tables may
// be megabytes, and such a file is no Live Photo), and at most maxTopBoxes
// top-level boxes are stepped over before the movie box.
const (
	maxMoov     = 16 << 20
	maxTopBoxes = 64
)

// ErrNoMovie is returned by ContentID for a file with no movie box within
// its limits: not a QuickTime or MP4 file, cut short, or too large a one.
var ErrNoMovie = errors.New("no movie box")

// ContentID returns the value of com.apple.quicktime.content.identifier in
// the movie-level metadata (moov/meta or moov/udta/meta: hdlr "mdta",
// keys, ilst) of a
// QuickTime or MP4 file of the given size, without ffprobe: a few reads
// of the file's boxes. "" with a nil error when the movie has no such key.
func ContentID(r io.ReaderAt, size int64) (string, error) {
	moov, err := readMoov(r, size)
	if err != nil {
		return "", err
	}
	// An iPhone writes moov/meta; ffmpeg (-movflags use_metadata_tags)
	// moov/udta/meta.
	for _, b := range boxes(moov) {
		metas := []box{b}
		if b.typ == "udta" {
			metas = boxes(b.body)
		}
		for _, m := range metas {
			if m.typ != "meta" {
				continue
			}
			if id := mdtaValue(metaChildren(m.body), ContentIDKey); id != "" {
				return id, nil
			}
		}
	}
	return "", nil
}

// readMoov finds the top-level moov box and returns its body.
func readMoov(r io.ReaderAt, size int64) ([]byte, error) {
	var hdr [16]byte
	for off, n := int64(0), 0; off+8 <= size; n++ {
		if n == maxTopBoxes {
			return nil, fmt.Errorf("%w in the first %d boxes", ErrNoMovie, maxTopBoxes)
		}
		if _, err := r.ReadAt(hdr[:8], off); err != nil {
			return nil, err
		}
		bsize, head := int64(binary.BigEndian.Uint32(hdr[:4])), int64(8)
		switch bsize {
		case 0: // to the end of the file
			bsize = size - off
		case 1: // a 64-bit size follows the type
			if off+16 > size {
				return nil, fmt.Errorf("%w: box at %d cut short", ErrNoMovie, off)
			}
			if _, err := r.ReadAt(hdr[8:16], off+8); err != nil {
				return nil, err
			}
			u := binary.BigEndian.Uint64(hdr[8:16])
			if u > uint64(size) {
				return nil, fmt.Errorf("%w: box at %d runs past the end", ErrNoMovie, off)
			}
			bsize, head = int64(u), 16
		}
		if bsize < head || bsize > size-off {
			return nil, fmt.Errorf("%w: box at %d has size %d of a %d-byte file", ErrNoMovie, off, bsize, size)
		}
		if string(hdr[4:8]) == "moov" {
			if bsize-head > maxMoov {
				return nil, fmt.Errorf("%w: movie box of %d bytes (over %d)", ErrNoMovie, bsize, maxMoov)
			}
			body := make([]byte, bsize-head)
			if _, err := r.ReadAt(body, off+head); err != nil {
				return nil, err
			}
			return body, nil
		}
		off += bsize
	}
	return nil, ErrNoMovie
}

// box is one box within a buffer: its type and body.
type box struct {
	typ  string
	body []byte
}

// boxes splits a buffer into the boxes it holds, stopping at the first
// one that does not fit (the rest is ignored, not an error).
func boxes(d []byte) []box {
	var out []box
	for len(d) >= 8 {
		n, head := uint64(binary.BigEndian.Uint32(d)), uint64(8)
		switch n {
		case 0:
			n = uint64(len(d))
		case 1:
			if len(d) < 16 {
				return out
			}
			n, head = binary.BigEndian.Uint64(d[8:]), 16
		}
		if n < head || n > uint64(len(d)) {
			return out
		}
		out = append(out, box{typ: string(d[4:8]), body: d[head:n]})
		d = d[n:]
	}
	return out
}

// metaChildren returns the boxes of a meta box's body. QuickTime's meta
// holds its children directly; ISO's (a full box) after 4 bytes of
// version and flags. The two are told apart by where a known child type
// stands.
func metaChildren(body []byte) []box {
	if len(body) >= 12 && isMetaChild(body[4:8]) {
		return boxes(body)
	}
	if len(body) >= 16 && isMetaChild(body[8:12]) {
		return boxes(body[4:])
	}
	return nil
}

func isMetaChild(t []byte) bool {
	switch string(t) {
	case "hdlr", "keys", "ilst", "free", "skip":
		return true
	}
	return false
}

// mdtaValue returns the UTF-8 value of key in a meta box's keys and ilst
// ("" when absent). keys lists the key names (each "mdta" + name); an
// ilst item's type is the 1-based index of its key, and its data box
// holds a type indicator (1: UTF-8), a locale and the value.
func mdtaValue(children []box, key string) string {
	var keys, ilst []byte
	for _, c := range children {
		switch c.typ {
		case "keys":
			keys = c.body
		case "ilst":
			ilst = c.body
		}
	}
	if len(keys) < 8 || ilst == nil {
		return ""
	}
	index := uint32(0)
	count := binary.BigEndian.Uint32(keys[4:])
	d := keys[8:]
	for i := uint32(1); i <= count && len(d) >= 8; i++ {
		n := binary.BigEndian.Uint32(d)
		if n < 8 || uint64(n) > uint64(len(d)) {
			return ""
		}
		if string(d[4:8]) == "mdta" && string(d[8:n]) == key {
			index = i
			break
		}
		d = d[n:]
	}
	if index == 0 {
		return ""
	}
	for _, item := range boxes(ilst) {
		if binary.BigEndian.Uint32([]byte(item.typ)) != index {
			continue
		}
		for _, data := range boxes(item.body) {
			v := data.body
			// Type indicator: a zero byte (the well-known set), then 1 for
			// UTF-8 without a count; then 4 bytes of locale.
			if data.typ != "data" || len(v) < 8 || v[0] != 0 || v[1] != 0 || v[2] != 0 || v[3] != 1 {
				continue
			}
			return string(bytes.TrimRight(v[8:], "\x00"))
		}
	}
	return ""
}
