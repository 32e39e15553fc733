package preprocess

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "images", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pngHeader is a PNG signature and IHDR chunk announcing w x h 8-bit RGB,
// followed by nothing.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.WriteString("IHDR")
	b.Write(ihdr)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte("IHDR"), ihdr...)))
	return b.Bytes()
}

// jpegHeader is SOI, a JFIF APP0 and a baseline SOF0 announcing w x h, 3
// components.
func jpegHeader(w, h uint16) []byte {
	b := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
		0xff, 0xc0, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3,
		1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1}
	return b
}

func TestHostileInput(t *testing.T) {
	photo := readTestdata(t, "orient6.jpg")
	pngData := readTestdata(t, "palette.png")
	garbled := bytes.Clone(pngData)
	for i := 60; i < len(garbled)-20; i += 7 {
		garbled[i] ^= 0x5a
	}
	tiffData := readTestdata(t, "rgb.tiff")
	dng := bytes.Clone(tiffData)
	// Turn the first IFD0 entry's tag into DNGVersion (0xc612).
	off := binary.LittleEndian.Uint32(dng[4:])
	binary.LittleEndian.PutUint16(dng[off+2:], 0xc612)
	bmpHuge := append([]byte("BM"), make([]byte, 52)...)
	binary.LittleEndian.PutUint32(bmpHuge[10:], 54)
	binary.LittleEndian.PutUint32(bmpHuge[14:], 40)
	binary.LittleEndian.PutUint32(bmpHuge[18:], 200000)
	binary.LittleEndian.PutUint32(bmpHuge[22:], 200000)
	binary.LittleEndian.PutUint16(bmpHuge[26:], 1)
	binary.LittleEndian.PutUint16(bmpHuge[28:], 24)
	gifHuge := []byte("GIF89a\xff\xff\xff\xff\x00\x00\x00;")

	for _, tc := range []struct {
		name string
		file string // used in messages, and for RAW extensions
		data []byte
		want error  // nil: must succeed
		text string // the error must contain it
	}{
		{"empty", "a.jpg", nil, ErrCorrupt, "empty"},
		{"text named jpg", "notes.jpg", []byte("just some text\n"), ErrUnknownFormat, "just some"},
		{"truncated jpeg", "cut.jpg", photo[:len(photo)/2], ErrCorrupt, "JPEG"},
		{"jpeg header only", "head.jpg", photo[:20], ErrCorrupt, ""},
		{"truncated png", "cut.png", pngData[:len(pngData)/3], ErrCorrupt, "PNG"},
		{"garbled png", "bad.png", garbled, ErrCorrupt, ""},
		{"png named jpg", "really-a-png.jpg", pngData, nil, ""},
		{"png 100000x100000", "huge.png", pngHeader(100000, 100000), ErrTooLarge, "100000x100000"},
		{"png 4 billion wide", "wide.png", pngHeader(1<<31-1, 1), ErrTooLarge, ""},
		{"jpeg 65000x65000", "huge.jpg", jpegHeader(65000, 65000), ErrTooLarge, "65000x65000"},
		{"bmp 200000x200000", "huge.bmp", bmpHuge, ErrTooLarge, ""},
		{"gif 65535x65535", "huge.gif", gifHuge, ErrTooLarge, ""},
		// HEIC and AVIF are decoded now (heif.go): a bare ftyp has no meta box.
		{"heic", "IMG_0001.HEIC", []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), ErrCorrupt, "HEIC"},
		{"avif", "a.avif", []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"), ErrCorrupt, "AVIF"},
		{"cr3", "a.cr3", []byte("\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom"), ErrUnsupported, "Canon CR3"},
		{"cr2", "a.cr2", []byte("II*\x00\x10\x00\x00\x00CR\x02\x00\x00\x00\x00\x00"), ErrUnsupported, "Canon CR2"},
		{"orf", "a.orf", []byte("IIRO\x08\x00\x00\x00\x00\x00"), ErrUnsupported, "Olympus ORF"},
		{"rw2", "a.rw2", []byte("IIU\x00\x08\x00\x00\x00\x00\x00"), ErrUnsupported, "Panasonic RW2"},
		{"raf", "a.raf", []byte("FUJIFILMCCD-RAW 0201FF383501"), ErrUnsupported, "Fujifilm RAF"},
		{"nef by extension", "DSC_0001.NEF", tiffData, ErrUnsupported, "Nikon NEF"},
		{"dng by tag", "photo.tif", dng, ErrUnsupported, "DNG"},
		{"jpeg xl", "a.jxl", []byte("\xff\x0a\xfa\x7f"), ErrUnsupported, "JPEG XL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(DefaultConfig(), Options{})
			var out []float32
			var err error
			a := bytesAllocated(func() { out, err = p.Bytes(tc.data, tc.file) })
			if tc.want == nil {
				if err != nil || len(out) != 3*224*224 {
					t.Fatalf("got %d values, error %v", len(out), err)
				}
				return
			}
			checkRefused(t, err, tc.want, tc.file, tc.text, a)
		})
	}
}

// bytesAllocated returns the bytes the process allocated while f ran
// (runtime.MemStats.TotalAlloc).
func bytesAllocated(f func()) uint64 {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	f()
	runtime.ReadMemStats(&ms1)
	return ms1.TotalAlloc - ms0.TotalAlloc
}

// checkRefused checks a refusal: err is want, names file and says text,
// and allocated (bytes) stayed under 8 MB.
func checkRefused(t *testing.T, err, want error, file, text string, allocated uint64) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), text) {
		t.Errorf("error %q should name %q and say %q", err, file, text)
	}
	if allocated > 8<<20 {
		t.Errorf("allocated %d MB on a refused file", allocated>>20)
	}
}

func TestMaxPixels(t *testing.T) {
	data := readTestdata(t, "palette.png") // 180x120
	for _, tc := range []struct {
		max  int
		want error
	}{{180 * 120, nil}, {180*120 - 1, ErrTooLarge}, {0, nil}} {
		_, err := New(DefaultConfig(), Options{MaxPixels: tc.max}).Bytes(data, "p.png")
		if !errors.Is(err, tc.want) {
			t.Errorf("MaxPixels %d: error %v, want %v", tc.max, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "180x120") {
			t.Errorf("error %q does not give the dimensions", err)
		}
	}
}

// TestPixelsOver: the pixel-limit comparison is exact at the limit and
// does not overflow for the 32-bit sizes a header may announce.
func TestPixelsOver(t *testing.T) {
	const big = 0xffffffff
	for _, tc := range []struct {
		w, h  int64 // an int of 32 bits holds the smaller cases only
		limit int64
		want  bool
	}{
		{180, 120, 180 * 120, false},
		{180, 120, 180*120 - 1, true},
		{1, 1, 1, false},
		{0xc0000000, 0xc0000000, DefaultMaxPixels, true}, // the product wraps to a negative int64
		{big, big, DefaultMaxPixels, true},
		{big, big, math.MaxInt64, true},
		{big, 1, big, false},
		{1 << 31, 1 << 31, 1 << 62, false},
		{1<<31 + 1, 1 << 31, 1 << 62, true},
	} {
		if int64(int(tc.w)) != tc.w || int64(int(tc.h)) != tc.h {
			continue
		}
		if got := pixelsOver(int(tc.w), int(tc.h), tc.limit); got != tc.want {
			t.Errorf("pixelsOver(%d, %d, %d) = %v, want %v", tc.w, tc.h, tc.limit, got, tc.want)
		}
	}
}

// TestFileErrors checks that File names the file in every failure.
func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.png")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := New(DefaultConfig(), Options{})
	for _, path := range []string{empty, filepath.Join(dir, "missing.jpg"), dir} {
		if _, err := p.File(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v does not name the file", path, err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to the whole path: it must return an
// error or a well-formed tensor, never panic, with bounded memory.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"orient6.jpg", "palette_trns.png", "anim.gif", "lossless.webp",
		"one_pixel.png", "tiny_7x5.png", "orient2.png"} {
		b := readTestdata(f, name)
		f.Add(b, name)
		f.Add(b[:len(b)/2], name)
	}
	f.Add(pngHeader(1<<20, 1<<20), "h.png")
	f.Add(jpegHeader(1, 65535), "h.jpg")
	var small bytes.Buffer
	png.Encode(&small, image.NewGray16(image.Rect(0, 0, 3, 2)))
	f.Add(small.Bytes(), "g16.png")
	p := New(DefaultConfig(), Options{MaxPixels: 1 << 20})
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		out, err := p.Bytes(data, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name %q", err, name)
			}
			return
		}
		if len(out) != 3*224*224 {
			t.Fatalf("%d values", len(out))
		}
		for _, v := range out {
			if !(v > -3 && v < 3) {
				t.Fatalf("value %v out of range", v)
			}
		}
	})
}
