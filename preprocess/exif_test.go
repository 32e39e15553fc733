package preprocess

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// tiffBlock builds a TIFF header and IFD0 with one entry.
func tiffBlock(bo binary.ByteOrder, tag, typ uint16, count, value uint32) []byte {
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	binary.Write(&b, bo, uint32(8))
	binary.Write(&b, bo, uint16(1))
	binary.Write(&b, bo, tag)
	binary.Write(&b, bo, typ)
	binary.Write(&b, bo, count)
	if typ == 3 { // SHORT: left-justified in the value field
		binary.Write(&b, bo, uint16(value))
		binary.Write(&b, bo, uint16(0))
	} else {
		binary.Write(&b, bo, value)
	}
	binary.Write(&b, bo, uint32(0))
	return b.Bytes()
}

func jpegWithAPP1(payload []byte) []byte {
	b := []byte{0xff, 0xd8, 0xff, 0xe1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}
	return append(append(b, payload...), 0xff, 0xd9)
}

func webpWithEXIF(payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF\x00\x00\x00\x00WEBPVP8X")
	binary.Write(&b, binary.LittleEndian, uint32(10))
	b.Write(make([]byte, 10))
	b.WriteString("EXIF")
	binary.Write(&b, binary.LittleEndian, uint32(len(payload)))
	b.Write(payload)
	return b.Bytes()
}

func TestEXIFOrientation(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	exif := func(tiff []byte) []byte { return append([]byte("Exif\x00\x00"), tiff...) }
	six := tiffBlock(be, tagOrientation, 3, 1, 6)
	for _, tc := range []struct {
		name string
		data []byte
		f    format
		want int
	}{
		{"jpeg big-endian", jpegWithAPP1(exif(six)), fmtJPEG, 6},
		{"jpeg little-endian", jpegWithAPP1(exif(tiffBlock(le, tagOrientation, 3, 1, 8))), fmtJPEG, 8},
		{"jpeg LONG", jpegWithAPP1(exif(tiffBlock(le, tagOrientation, 4, 1, 3))), fmtJPEG, 3},
		{"jpeg XMP APP1 only", jpegWithAPP1([]byte("http://ns.adobe.com/xap/1.0/\x00<x/>")), fmtJPEG, 1},
		{"jpeg other tag", jpegWithAPP1(exif(tiffBlock(le, 0x010f, 3, 1, 6))), fmtJPEG, 1},
		{"jpeg value 9", jpegWithAPP1(exif(tiffBlock(le, tagOrientation, 3, 1, 9))), fmtJPEG, 1},
		{"jpeg value 0", jpegWithAPP1(exif(tiffBlock(le, tagOrientation, 3, 1, 0))), fmtJPEG, 1},
		{"jpeg count 0", jpegWithAPP1(exif(tiffBlock(le, tagOrientation, 3, 0, 6))), fmtJPEG, 1},
		{"jpeg IFD offset past end", jpegWithAPP1(exif([]byte("II*\x00\xff\x00\x00\x00"))), fmtJPEG, 1},
		{"jpeg segment length past end", []byte{0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff, 'E', 'x'}, fmtJPEG, 1},
		{"jpeg truncated IFD", jpegWithAPP1(exif(six[:14])), fmtJPEG, 1},
		{"webp", webpWithEXIF(six), fmtWebP, 6},
		{"webp with Exif prefix", webpWithEXIF(exif(six)), fmtWebP, 6},
		{"webp chunk too long", webpWithEXIF(six)[:30], fmtWebP, 1},
		{"tiff file", six, fmtTIFF, 6},
		{"gif never", six, fmtGIF, 1},
	} {
		if got := exifOrientation(tc.data, tc.f); got != tc.want {
			t.Errorf("%s: orientation %d, want %d", tc.name, got, tc.want)
		}
	}
	// Files written by Pillow (testdata/make_refs.py).
	for o := 1; o <= 8; o++ {
		if got := exifOrientation(readTestdata(t, fmt.Sprintf("orient%d.png", o)), fmtPNG); got != o {
			t.Errorf("orient%d.png: orientation %d", o, got)
		}
	}
	for _, o := range []int{3, 6, 8} {
		if got := exifOrientation(readTestdata(t, fmt.Sprintf("orient%d.jpg", o)), fmtJPEG); got != o {
			t.Errorf("orient%d.jpg: orientation %d", o, got)
		}
	}
}

// FuzzEXIF checks that the orientation parsers never panic and always
// return 1..8.
func FuzzEXIF(f *testing.F) {
	f.Add(jpegWithAPP1(append([]byte("Exif\x00\x00"), tiffBlock(binary.BigEndian, tagOrientation, 3, 1, 6)...)))
	f.Add(webpWithEXIF(tiffBlock(binary.LittleEndian, tagOrientation, 3, 1, 5)))
	f.Add(readTestdata(f, "orient7.png"))
	f.Add(readTestdata(f, "orient8.jpg")[:200])
	f.Fuzz(func(t *testing.T, data []byte) {
		for f := fmtJPEG; f <= fmtTIFF; f++ {
			if o := exifOrientation(data, f); o < 1 || o > 8 {
				t.Fatalf("%s: orientation %d", f, o)
			}
		}
	})
}

// TestOrient checks the eight orientations on a 3x2 image whose pixels are
// numbered in reading order:
//
//	0 1 2
//	3 4 5
//
// The expected layouts are those of the EXIF specification (what a viewer
// shows after applying the tag).
func TestOrient(t *testing.T) {
	src := make([]byte, 6*3)
	for i := range 6 {
		src[i*3], src[i*3+1], src[i*3+2] = byte(i), byte(10+i), byte(20+i)
	}
	for _, tc := range []struct {
		o    int
		w, h int
		want []byte
	}{
		{1, 3, 2, []byte{0, 1, 2, 3, 4, 5}},
		{2, 3, 2, []byte{2, 1, 0, 5, 4, 3}}, // mirror left-right
		{3, 3, 2, []byte{5, 4, 3, 2, 1, 0}}, // rotate 180
		{4, 3, 2, []byte{3, 4, 5, 0, 1, 2}}, // mirror top-bottom
		{5, 2, 3, []byte{0, 3, 1, 4, 2, 5}}, // transpose
		{6, 2, 3, []byte{3, 0, 4, 1, 5, 2}}, // rotate 90 clockwise
		{7, 2, 3, []byte{5, 2, 4, 1, 3, 0}}, // transverse
		{8, 2, 3, []byte{2, 5, 1, 4, 0, 3}}, // rotate 90 counter-clockwise
		{0, 3, 2, []byte{0, 1, 2, 3, 4, 5}}, // invalid: unchanged
	} {
		dst := make([]byte, len(src))
		w, h := orient(dst, src, 3, 2, tc.o)
		if w != tc.w || h != tc.h {
			t.Errorf("orientation %d: %dx%d, want %dx%d", tc.o, w, h, tc.w, tc.h)
		}
		for i, v := range tc.want {
			if d := dst[i*3 : i*3+3]; d[0] != v || d[1] != 10+v || d[2] != 20+v {
				t.Errorf("orientation %d: pixel %d is %v, want %d", tc.o, i, d, v)
				break
			}
		}
	}
}

// TestOrientLarge checks the tiled loop on sizes that are not multiples of
// the tile against a per-pixel transcription of the EXIF definitions.
func TestOrientLarge(t *testing.T) {
	const w, h = 131, 70
	src := synthetic(w, h, "noise")
	at := func(x, y int) []byte { return src[(y*w+x)*3 : (y*w+x)*3+3] }
	for o := 1; o <= 8; o++ {
		dst := make([]byte, len(src))
		ow, oh := orient(dst, src, w, h, o)
		for y := 0; y < oh; y++ {
			for x := 0; x < ow; x++ {
				var s []byte
				switch o {
				case 1:
					s = at(x, y)
				case 2:
					s = at(w-1-x, y)
				case 3:
					s = at(w-1-x, h-1-y)
				case 4:
					s = at(x, h-1-y)
				case 5:
					s = at(y, x)
				case 6:
					s = at(y, h-1-x)
				case 7:
					s = at(w-1-y, h-1-x)
				case 8:
					s = at(w-1-y, x)
				}
				if !bytes.Equal(dst[(y*ow+x)*3:(y*ow+x)*3+3], s) {
					t.Fatalf("orientation %d: pixel (%d,%d) differs", o, x, y)
				}
			}
		}
	}
}
