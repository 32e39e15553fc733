package preprocess

import (
	"encoding/binary"
	"fmt"
	"io"
)

// metaFirstRead is the first piece MetaBytes reads of a file: a phone's
// or camera's JPEG holds its EXIF and frame header within it.
const metaFirstRead = 64 << 10

// MetaBytes returns the bytes of a file of size bytes that ReadMeta needs,
// with the same result as on the whole file: for a JPEG, its segments up
// to the first scan (EXIF, frame header; the image data after them is
// never read), read in growing pieces; for other formats the whole file.
// Reading metadata for an index that lacks it then costs a few tens of
// kilobytes a photo, not the photo. It reads at most limit bytes (no limit
// when 0), and fails when it would need more.
func MetaBytes(r io.ReaderAt, size, limit int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("size %d", size)
	}
	if limit <= 0 {
		limit = size
	}
	buf, err := readPrefix(r, nil, min(size, metaFirstRead, limit))
	if err != nil {
		return nil, err
	}
	more := func(n int64) ([]byte, error) {
		if n > limit {
			return nil, fmt.Errorf("its metadata would need %d bytes read, over the limit of %d", n, limit)
		}
		return readPrefix(r, buf, n)
	}
	if f, _ := sniff(buf, ""); f != fmtJPEG {
		return more(size)
	}
	for {
		// jpegExif takes a marker 0xd8 for one without a length, jpegFrame
		// for a segment: walk both ways, and keep what both read.
		end1, need1 := jpegHeadEnd(buf, true)
		end2, need2 := jpegHeadEnd(buf, false)
		if need1 == 0 && need2 == 0 {
			return buf[:min(len(buf), max(end1, end2))], nil
		}
		need := max(need1, need2)
		if int64(len(buf)) == size {
			return buf, nil // cut short: all there is
		}
		if buf, err = more(min(size, max(int64(need), min(limit, int64(2*len(buf)))))); err != nil {
			return nil, err
		}
	}
}

// readPrefix extends have (the file's first len(have) bytes) to its first
// n bytes.
func readPrefix(r io.ReaderAt, have []byte, n int64) ([]byte, error) {
	if int64(len(have)) >= n {
		return have[:n], nil
	}
	buf := make([]byte, n)
	copy(buf, have)
	if _, err := r.ReadAt(buf[len(have):], int64(len(have))); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// jpegHeadEnd walks the markers of a JPEG's first bytes d as a metadata
// reader does (jpegExif with d8 true, jpegFrame with it false) and returns
// how much of d it reads: through the start-of-scan marker, the end of
// image, or the first byte that is no marker, where it stops. need is 0
// then, or how many bytes of the file the walk needs to go on.
func jpegHeadEnd(d []byte, d8 bool) (end, need int) {
	i := 2
	for {
		if i+4 > len(d) {
			return 0, i + 4
		}
		if d[i] != 0xff {
			return i + 4, 0
		}
		m := d[i+1]
		switch {
		case m == 0xff: // fill byte
			i++
			continue
		case m == 0xd8 && d8, m == 0x01, m >= 0xd0 && m <= 0xd7:
			i += 2
			continue
		case m == 0xda || m == 0xd9:
			return i + 4, 0
		}
		n := int(binary.BigEndian.Uint16(d[i+2:]))
		if n < 2 {
			return i + 4, 0
		}
		if i+2+n > len(d) {
			return 0, i + 2 + n + 4
		}
		i += 2 + n
	}
}
