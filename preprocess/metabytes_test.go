package preprocess

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"testing"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bytes.Reader
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// segment is a JPEG marker segment with a payload of n bytes.
func segment(marker byte, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint16([]byte{0xff, marker}, uint16(len(payload)+2)), payload...)
}

// TestMetaBytes: ReadMeta on MetaBytes' bytes equals ReadMeta on the whole
// file for JPEGs whose metadata sits behind large segments, with odd
// markers, cut short anywhere, and for other formats (read whole); and a
// large JPEG is read only through its headers.
func TestMetaBytes(t *testing.T) {
	var tagged bytes.Buffer
	if err := jpeg.Encode(&tagged, testPicture(640, 480), &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	exif := segment(0xe1, append([]byte("Exif\x00\x00"), tiffBlock(binary.LittleEndian, 0x0112, 3, 1, 6)...)) // orientation 6: 480 wide
	r := rand.New(rand.NewPCG(1, 1))
	big := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(255)) // never 0xff: no marker inside
		}
		return b
	}
	body := tagged.Bytes()[2:]
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	soi := []byte{0xff, 0xd8}
	files := map[string][]byte{
		"plain":                  tagged.Bytes(),
		"exif first":             cat(soi, exif, body),
		"behind 200 KB of ICC":   cat(soi, segment(0xe2, big(65000)), segment(0xe2, big(65000)), segment(0xe2, big(65000)), exif, body),
		"exif at 64 KB boundary": cat(soi, segment(0xe2, big(metaFirstRead-40)), exif, body),
		"fill bytes, d8, rst":    cat(soi, []byte{0xff, 0xff, 0xff, 0xd8, 0xff, 0xd0}, exif, body),
		"no marker after soi":    cat(soi, []byte{0x12, 0x34}, exif, body),
		"png":                    pngBytes(t),
	}
	for name, data := range files {
		want := ReadMeta(data)
		for _, cut := range []int{len(data), len(data) / 2, len(data) / 7, 300, 70, 5, 2, 0} {
			d := data[:min(cut, len(data))]
			head, err := MetaBytes(bytes.NewReader(d), int64(len(d)), 0)
			if err != nil {
				t.Fatalf("%s cut at %d: %v", name, cut, err)
			}
			if got, full := ReadMeta(head), ReadMeta(d); !sameMeta(got, full) {
				t.Errorf("%s cut at %d: %+v from %d bytes, %+v from the file", name, cut, got, len(head), full)
			}
		}
		// jpegFrame reads the stray d8 as a segment and finds no frame;
		// jpegExif skips it and finds the EXIF.
		wantWidth := map[string]int{"plain": 640, "no marker after soi": 0, "png": 640, "fill bytes, d8, rst": 0}[name]
		if _, ok := map[string]bool{"plain": true, "no marker after soi": true, "png": true, "fill bytes, d8, rst": true}[name]; !ok {
			wantWidth = 480 // the EXIF's orientation was read
		}
		if want.Width != wantWidth {
			t.Errorf("%s: width %d, want %d: the test file is not what it says", name, want.Width, wantWidth)
		}
	}

	// A large JPEG: only its headers are read.
	var large bytes.Buffer
	if err := jpeg.Encode(&large, noisePicture(r, 2000, 1500), &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	data := cat(soi, exif, large.Bytes()[2:])
	c := &countingReader{r: bytes.NewReader(data)}
	head, err := MetaBytes(c, int64(len(data)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !sameMeta(ReadMeta(head), ReadMeta(data)) || ReadMeta(head).Width != 1500 {
		t.Errorf("large JPEG: %+v from its headers, %+v from the file", ReadMeta(head), ReadMeta(data))
	}
	t.Logf("large JPEG: %d of its %d bytes read for its metadata", c.n, len(data))
	if c.n > metaFirstRead || int64(len(data)) < 10*c.n {
		t.Errorf("large JPEG: read %d of its %d bytes for its metadata", c.n, len(data))
	}

	// A limit: the large JPEG's headers fit under it, a PNG read whole
	// and the JPEG behind 200 KB of ICC do not.
	if _, err := MetaBytes(bytes.NewReader(data), int64(len(data)), 100<<10); err != nil {
		t.Errorf("large JPEG under a 100 KB limit: %v", err)
	}
	p := files["png"]
	if _, err := MetaBytes(bytes.NewReader(p), int64(len(p)), int64(len(p)-1)); err == nil {
		t.Errorf("a PNG over the limit: no error")
	}
	icc := files["behind 200 KB of ICC"]
	if _, err := MetaBytes(bytes.NewReader(icc), int64(len(icc)), 100<<10); err == nil {
		t.Errorf("a JPEG whose headers are over the limit: no error")
	}
}

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, testPicture(640, 480)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// noisePicture is w×h random pixels: a JPEG of it is large.
func noisePicture(r *rand.Rand, w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = byte(r.IntN(256))
	}
	return m
}
