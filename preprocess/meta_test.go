package preprocess

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/tiff"
)

// exiftoolNeed returns exiftool's path, or skips the test (fails it under
// CI=true, where .ci/run installs libimage-exiftool-perl).
func exiftoolNeed(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("exiftool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("exiftool not found (Debian: apt-get install libimage-exiftool-perl)")
		}
		t.Skip("exiftool not found (Debian: apt-get install libimage-exiftool-perl)")
	}
	return p
}

// exiftoolRead is what `exiftool -j -n -G` reads from each file, by path.
func exiftoolRead(t *testing.T, tool string, paths []string) map[string]map[string]any {
	t.Helper()
	out, err := exec.Command(tool, append([]string{"-j", "-n", "-G", "-q", "-q"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("exiftool: %v", err)
	}
	var list []map[string]any
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("exiftool output: %v", err)
	}
	res := map[string]map[string]any{}
	for _, m := range list {
		res[m["SourceFile"].(string)] = m
	}
	return res
}

// first returns the first of keys present in m.
func first(m map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return nil, false
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// wantMeta turns exiftool's reading into the Meta it implies, parsed here
// independently of ReadMeta's own parsing.
func wantMeta(t *testing.T, name string, e map[string]any, heif bool) Meta {
	var m Meta
	// DateTimeOriginal, else DateTimeDigitized (exiftool's CreateDate).
	for _, tags := range [][3]string{{"EXIF:DateTimeOriginal", "EXIF:SubSecTimeOriginal", "EXIF:OffsetTimeOriginal"},
		{"EXIF:CreateDate", "EXIF:SubSecTimeDigitized", "EXIF:OffsetTimeDigitized"}} {
		v, ok := first(e, tags[0])
		if !ok || !m.Taken.IsZero() {
			continue
		}
		tm, err := time.Parse("2006:01:02 15:04:05", text(v))
		if err != nil {
			continue
		}
		if s, ok := first(e, tags[1]); ok {
			frac, err := strconv.ParseFloat("0."+text(s), 64)
			if err != nil {
				t.Fatalf("%s: %s %v", name, tags[1], s)
			}
			tm = tm.Add(time.Duration(math.Round(frac * 1e9)))
		}
		m.Taken = tm
		if o, ok := first(e, tags[2]); ok {
			z, err := time.Parse("-07:00", text(o))
			if err != nil {
				t.Fatalf("%s: %s %v", name, tags[2], o)
			}
			_, off := z.Zone()
			m.Offset, m.HasOffset = off/60, true
		}
	}
	if la, ok := first(e, "Composite:GPSLatitude"); ok {
		lo, _ := first(e, "Composite:GPSLongitude")
		m.HasGPS, m.Lat, m.Lon = true, la.(float64), lo.(float64)
		if a, ok := first(e, "Composite:GPSAltitude"); ok {
			m.HasAlt, m.Alt = true, a.(float64)
		}
	}
	if v, ok := first(e, "EXIF:Make"); ok {
		m.Make = strings.TrimSpace(text(v))
	}
	if v, ok := first(e, "EXIF:Model"); ok {
		m.Model = strings.TrimSpace(text(v))
	}
	if v, ok := first(e, "EXIF:LensModel"); ok {
		m.Lens = strings.TrimSpace(text(v))
	}
	size, sized := first(e, "Composite:ImageSize")
	if v, ok := first(e, "EXIF:DefaultCropSize"); ok {
		// A DNG's developed picture is the default crop of its raw image,
		// which exiftool gives beside ImageSize (the raw image's own).
		size, sized = v, true
	}
	if v, ok := size, sized; ok {
		f := strings.Fields(strings.ReplaceAll(text(v), "x", " "))
		if len(f) == 2 {
			m.Width, _ = strconv.Atoi(f[0])
			m.Height, _ = strconv.Atoi(f[1])
		}
		// Displayed: HEIF turns by its irot (exiftool's Rotation), the
		// others by their EXIF Orientation.
		turn := false
		if heif {
			r, _ := first(e, "QuickTime:Rotation")
			turn = text(r) == "90" || text(r) == "270"
		} else if o, ok := first(e, "EXIF:Orientation", "IFD0:Orientation"); ok {
			n, _ := strconv.Atoi(text(o))
			turn = n >= 5 && n <= 8
		}
		if turn {
			m.Width, m.Height = m.Height, m.Width
		}
	}
	return m
}

func sameMeta(a, b Meta) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	return a.Taken.Equal(b.Taken) && a.Offset == b.Offset && a.HasOffset == b.HasOffset &&
		a.HasGPS == b.HasGPS && near(a.Lat, b.Lat) && near(a.Lon, b.Lon) && a.HasAlt == b.HasAlt && near(a.Alt, b.Alt) &&
		a.Make == b.Make && a.Model == b.Model && a.Lens == b.Lens && a.Width == b.Width && a.Height == b.Height
}

func testPicture(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 5), uint8(y * 7), 90, 255})
		}
	}
	return img
}

// craftDNG lays out a minimal DNG by hand: IFD0 is a JPEG preview strip
// (compression 7) with DNGVersion, and its SubIFD the raw image (CFA,
// 64x40, 8 bits) with a DefaultCropSize of 60x36, the size of the
// developed picture; exiftool then writes the EXIF into it.
func craftDNG(t *testing.T, path string) {
	var j bytes.Buffer
	if err := jpeg.Encode(&j, testPicture(48, 32), nil); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	const n, nr = 10, 10
	ifd := 8
	raw := ifd + 2 + 12*n + 4
	crop := raw + 2 + 12*nr + 4 // two LONGs
	rawData := crop + 8         // 64x40 bytes
	data := rawData + 64*40     // the preview
	b := make([]byte, data)
	copy(b, "II*\x00")
	le.PutUint32(b[4:], uint32(ifd))
	le.PutUint16(b[ifd:], n)
	le.PutUint16(b[raw:], nr)
	entry := func(at, k int, tag, typ uint16, count, val uint32) {
		e := b[at+2+12*k:]
		le.PutUint16(e, tag)
		le.PutUint16(e[2:], typ)
		le.PutUint32(e[4:], count)
		le.PutUint32(e[8:], val)
	}
	entry(ifd, 0, 0x00fe, 4, 1, 1)  // NewSubfileType: reduced resolution
	entry(ifd, 1, 0x0100, 4, 1, 48) // ImageWidth
	entry(ifd, 2, 0x0101, 4, 1, 32) // ImageLength
	entry(ifd, 3, 0x0103, 3, 1, 7)  // Compression: JPEG
	entry(ifd, 4, 0x0106, 3, 1, 6)  // PhotometricInterpretation: YCbCr
	entry(ifd, 5, 0x0111, 4, 1, uint32(data))
	entry(ifd, 6, 0x0115, 3, 1, 3)
	entry(ifd, 7, 0x0117, 4, 1, uint32(j.Len()))
	entry(ifd, 8, 0x014a, 4, 1, uint32(raw))     // SubIFDs
	entry(ifd, 9, 0xc612, 1, 4, 0x00000401)      // DNGVersion 1.4.0.0
	entry(raw, 0, 0x00fe, 4, 1, 0)               // NewSubfileType: the main image
	entry(raw, 1, 0x0100, 4, 1, 64)              // ImageWidth
	entry(raw, 2, 0x0101, 4, 1, 40)              // ImageLength
	entry(raw, 3, 0x0102, 3, 1, 8)               // BitsPerSample
	entry(raw, 4, 0x0103, 3, 1, 1)               // Compression: none
	entry(raw, 5, 0x0106, 3, 1, 32803)           // PhotometricInterpretation: CFA
	entry(raw, 6, 0x0111, 4, 1, uint32(rawData)) // StripOffsets
	entry(raw, 7, 0x0115, 3, 1, 1)
	entry(raw, 8, 0x0117, 4, 1, 64*40)        // StripByteCounts
	entry(raw, 9, 0xc620, 4, 2, uint32(crop)) // DefaultCropSize
	le.PutUint32(b[crop:], 60)
	le.PutUint32(b[crop+4:], 36)
	b = append(b, j.Bytes()...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadMetaMatchesExiftool: a corpus written with exiftool (known
// dates, offsets, sub-seconds, GPS in every hemisphere, cameras, lenses,
// orientations) in JPEG, PNG, TIFF, HEIC, AVIF and a crafted DNG, with the
// test images of this package and of Go's image package, reads as exiftool
// reads it.
func TestReadMetaMatchesExiftool(t *testing.T) {
	tool := exiftoolNeed(t)
	dir := t.TempDir()
	pic := testPicture(40, 24)
	write := func(name string, enc func(*bytes.Buffer) error) string {
		var buf bytes.Buffer
		if err := enc(&buf); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jpg := func(name string) string {
		return write(name, func(b *bytes.Buffer) error { return jpeg.Encode(b, pic, nil) })
	}
	pngf := func(name string) string {
		return write(name, func(b *bytes.Buffer) error { return png.Encode(b, pic) })
	}
	heif := func(name string, avif bool) string {
		enc := heifNeedTool(t, "heif-enc")
		src := pngf(name + ".src.png")
		out := filepath.Join(dir, name)
		args := []string{src, "-o", out}
		if avif {
			args = append([]string{"-A"}, args...)
		}
		if b, err := exec.Command(enc, args...).CombinedOutput(); err != nil {
			t.Fatalf("heif-enc %s: %v\n%s", name, err, b)
		}
		return out
	}
	type tagged struct {
		path string
		heif bool
		tags []string
	}
	cases := []tagged{
		{jpg("sydney.jpg"), false, []string{"-DateTimeOriginal=2019:07:01 12:34:56", "-OffsetTimeOriginal=+10:00", "-SubSecTimeOriginal=050",
			"-GPSLatitude=33.8688", "-GPSLatitudeRef=S", "-GPSLongitude=151.2093", "-GPSLongitudeRef=E", "-GPSAltitude=12.5", "-GPSAltitudeRef#=1",
			"-Make=PENTAX", "-Model=PENTAX K-1", "-LensModel=smc PENTAX-FA 31mm F1.8 AL Limited", "-Orientation#=6"}},
		{pngf("newyork.png"), false, []string{"-DateTimeOriginal=2021:12:31 23:59:59", "-OffsetTimeOriginal=-05:00", "-SubSecTimeOriginal=7",
			"-GPSLatitude=40.7128", "-GPSLatitudeRef=N", "-GPSLongitude=74.006", "-GPSLongitudeRef=W", "-GPSAltitude=10", "-GPSAltitudeRef#=0",
			"-Make=Apple", "-Model=iPhone 12", "-Orientation#=8"}},
		{write("chamonix.tiff", func(b *bytes.Buffer) error { return tiff.Encode(b, pic, nil) }), false, []string{
			"-DateTimeOriginal=2018:02:10 09:00:00", "-GPSLatitude=45.9237", "-GPSLatitudeRef=N", "-GPSLongitude=6.8694", "-GPSLongitudeRef=E",
			"-Make=Canon", "-Model=Canon EOS 5D Mark IV", "-LensModel=EF24-70mm f/2.8L II USM"}},
		{heif("buenosaires.heic", false), true, []string{"-DateTimeOriginal=2020:03:15 18:20:00", "-OffsetTimeOriginal=-03:00", "-SubSecTimeOriginal=999",
			"-GPSLatitude=34.6037", "-GPSLatitudeRef=S", "-GPSLongitude=58.3816", "-GPSLongitudeRef=W", "-GPSAltitude=25.25", "-GPSAltitudeRef#=0",
			"-Make=Apple", "-Model=iPhone 13 Pro", "-LensModel=iPhone 13 Pro back triple camera 5.7mm f/1.5"}},
		{heif("tokyo.avif", true), true, []string{"-DateTimeOriginal=2022:11:05 07:08:09", "-OffsetTimeOriginal=+09:00",
			"-GPSLatitude=35.6812", "-GPSLatitudeRef=N", "-GPSLongitude=139.7671", "-GPSLongitudeRef=E",
			"-Make=SONY", "-Model=ILCE-7M3"}},
		{jpg("noclock.jpg"), false, []string{"-DateTimeOriginal=0000:00:00 00:00:00", "-Make=NIKON CORPORATION"}},
		// Impossible dates read as no date (time.Parse refuses them too).
		{jpg("feb30.jpg"), false, []string{"-DateTimeOriginal=2019:02:30 10:00:00", "-OffsetTimeOriginal=+01:00", "-Make=FUJIFILM"}},
		{pngf("hour24.png"), false, []string{"-DateTimeOriginal=2019:12:31 24:00:00", "-Make=Panasonic"}},
		{jpg("bare.jpg"), false, nil},
		// A scan, or an editor's export: DateTimeDigitized alone is the date.
		{jpg("scanned.jpg"), false, []string{"-CreateDate=1998:07:04 16:20:00", "-OffsetTimeDigitized=-04:00", "-SubSecTimeDigitized=5", "-Make=EPSON"}},
		{pngf("digitized.png"), false, []string{"-CreateDate=2016:05:01 08:00:00"}},
		// Both: DateTimeOriginal wins, with its own offset.
		{jpg("both.jpg"), false, []string{"-DateTimeOriginal=2015:01:02 03:04:05", "-OffsetTimeOriginal=+01:00",
			"-CreateDate=2019:09:09 09:09:09", "-OffsetTimeDigitized=+08:00"}},
		// An unreadable original and a good digitized date.
		{jpg("badorig.jpg"), false, []string{"-DateTimeOriginal=2019:02:30 10:00:00", "-CreateDate=2019:03:01 10:00:00"}},
	}
	dng := filepath.Join(dir, "crafted.dng")
	craftDNG(t, dng)
	cases = append(cases, tagged{dng, false, []string{"-DateTimeOriginal=2017:08:21 10:15:00", "-OffsetTimeOriginal=-07:00", "-SubSecTimeOriginal=25",
		"-GPSLatitude=44.0", "-GPSLatitudeRef=N", "-GPSLongitude=121.0", "-GPSLongitudeRef=W", "-GPSAltitude=1000", "-GPSAltitudeRef#=0",
		"-Make=Leica Camera AG", "-Model=LEICA Q2", "-LensModel=SUMMILUX 1:1.7/28 ASPH."}})
	var paths []string
	for _, c := range cases {
		if len(c.tags) > 0 {
			if b, err := exec.Command(tool, append([]string{"-q", "-overwrite_original"}, append(c.tags, c.path)...)...).CombinedOutput(); err != nil {
				t.Fatalf("exiftool writing %s: %v\n%s", c.path, err, b)
			}
		}
		paths = append(paths, c.path)
	}
	// References as some writers store them: lower case, and the altitude's
	// as a SHORT (exiftool writes "S", "W" and a BYTE; the entries are
	// patched in place). Once read as north, east and above the sea.
	odd := cases[len(cases)-1].path
	odd = odd[:len(odd)-len(filepath.Base(odd))] + "lowercase.jpg"
	jpg("lowercase.jpg")
	if b, err := exec.Command(tool, "-q", "-overwrite_original", "-GPSLatitude=33.8688", "-GPSLatitudeRef=S", "-GPSLongitude=70.5", "-GPSLongitudeRef=W",
		"-GPSAltitude=430", "-GPSAltitudeRef#=1", odd).CombinedOutput(); err != nil {
		t.Fatalf("exiftool writing %s: %v\n%s", odd, err, b)
	}
	patchGPSRefs(t, odd)
	paths = append(paths, odd)
	heifs := map[string]bool{}
	for _, c := range cases {
		heifs[c.path] = c.heif
	}
	// Third-party files: this package's test images and Go's.
	patterns := []string{"testdata/images/*", "testdata/heif/*.heic", "testdata/heif/*.avif", filepath.Join(runtime.GOROOT(), "src", "image", "testdata", "*")}
	if dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/image").Output(); err == nil {
		patterns = append(patterns, filepath.Join(strings.TrimSpace(string(dir)), "testdata", "*"))
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("golang.org/x/image's test images not found: %v", err)
	}
	for _, pattern := range patterns {
		ms, _ := filepath.Glob(pattern)
		for _, p := range ms {
			if ext := filepath.Ext(p); ext == ".heic" || ext == ".avif" {
				heifs[p] = true
			}
			paths = append(paths, p)
		}
	}
	read := exiftoolRead(t, tool, paths)
	withGPS, withDate, compared := 0, 0, 0
	for _, p := range paths {
		e, ok := read[p]
		if !ok {
			continue // exiftool reads nothing from it (not an image it knows)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := sniff(data, p); f == fmtUnknown {
			continue
		}
		compared++
		got, want := ReadMeta(data), wantMeta(t, p, e, heifs[p])
		if head, err := MetaBytes(bytes.NewReader(data), int64(len(data)), 0); err != nil || !sameMeta(ReadMeta(head), got) {
			t.Errorf("%s: from MetaBytes' %d of %d bytes %+v (%v), from the file %+v", filepath.Base(p), len(head), len(data), ReadMeta(head), err, got)
		}
		if !sameMeta(got, want) {
			t.Errorf("%s:\n got  %+v\n want %+v (exiftool)", filepath.Base(p), got, want)
		}
		if got.HasGPS {
			withGPS++
		}
		if !got.Taken.IsZero() {
			withDate++
		}
	}
	t.Logf("%d files compared with exiftool", compared)
	if compared < 50 {
		t.Errorf("only %d files compared: the third-party images were not found", compared)
	}
	if withGPS < 6 || withDate < 6 {
		t.Errorf("only %d files with GPS and %d with a date: the corpus was not written", withGPS, withDate)
	}
}

// patchGPSRefs rewrites, in the file at path, the GPS references exiftool
// wrote ("S", "W", altitude reference 1 as a BYTE) as "s", "w" and a SHORT 1,
// in either byte order.
func patchGPSRefs(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ from, to []byte }{
		{[]byte{0, 1, 0, 2, 0, 0, 0, 2, 'S', 0}, []byte{0, 1, 0, 2, 0, 0, 0, 2, 's', 0}},
		{[]byte{0, 3, 0, 2, 0, 0, 0, 2, 'W', 0}, []byte{0, 3, 0, 2, 0, 0, 0, 2, 'w', 0}},
		{[]byte{0, 5, 0, 1, 0, 0, 0, 1, 1, 0}, []byte{0, 5, 0, 3, 0, 0, 0, 1, 0, 1}},
		{[]byte{1, 0, 2, 0, 2, 0, 0, 0, 'S', 0}, []byte{1, 0, 2, 0, 2, 0, 0, 0, 's', 0}},
		{[]byte{3, 0, 2, 0, 2, 0, 0, 0, 'W', 0}, []byte{3, 0, 2, 0, 2, 0, 0, 0, 'w', 0}},
		{[]byte{5, 0, 1, 0, 1, 0, 0, 0, 1, 0}, []byte{5, 0, 3, 0, 1, 0, 0, 0, 1, 0}},
	} {
		data = bytes.Replace(data, p.from, p.to, 1)
	}
	if bytes.Count(data, []byte{'s', 0}) == 0 || bytes.Contains(data, []byte{0, 1, 0, 2, 0, 0, 0, 2, 'S', 0}) || bytes.Contains(data, []byte{1, 0, 2, 0, 2, 0, 0, 0, 'S', 0}) {
		t.Fatal("the GPS references were not found to patch")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadMetaHostile: truncations and garbage of a tagged file never
// panic, and whatever they yield is in range.
func TestReadMetaHostile(t *testing.T) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, testPicture(16, 8), nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{nil, {0xff, 0xd8, 0xff}, buf.Bytes(), []byte("II*\x00\xff\xff\xff\xff"), []byte("MM\x00*\x00\x00\x00\x08\xff\xff")} {
		for n := 0; n <= len(d); n += 1 + len(d)/64 {
			m := ReadMeta(d[:n])
			if m.HasGPS && (math.Abs(m.Lat) > 90 || math.Abs(m.Lon) > 180) {
				t.Fatalf("GPS out of range: %+v", m)
			}
		}
	}
}

func FuzzReadMeta(f *testing.F) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, testPicture(8, 8), nil); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("II*\x00\x08\x00\x00\x00\x01\x00\x25\x88\x04\x00\x01\x00\x00\x00\x08\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := ReadMeta(b)
		if m.HasGPS && (math.Abs(m.Lat) > 90 || math.Abs(m.Lon) > 180 || math.IsNaN(m.Lat)) {
			t.Fatalf("GPS out of range: %+v", m)
		}
	})
}

func TestExifTime(t *testing.T) {
	for _, c := range []struct {
		s, sub string
		want   string // RFC3339Nano, "" = absent
	}{
		{"2019:07:01 12:34:56", "", "2019-07-01T12:34:56Z"},
		{"2019:07:01 12:34:56", "050", "2019-07-01T12:34:56.05Z"},
		{"2019:07:01 12:34:56", "5", "2019-07-01T12:34:56.5Z"},
		{"2019:07:01 12:34:56\x00", " 123456789123 ", "2019-07-01T12:34:56.123456789Z"},
		{"2019-07-01T12:34:56", "x1", "2019-07-01T12:34:56Z"},
		{"0000:00:00 00:00:00", "", ""},
		{"    :  :     :  :  ", "", ""},
		{"2019:13:01 12:34:56", "", ""},
		// Impossible dates and times are absent, not rolled over.
		{"2019:02:30 10:00:00", "", ""},
		{"2019:02:29 10:00:00", "", ""},
		{"2020:02:29 10:00:00", "", "2020-02-29T10:00:00Z"},
		{"1900:02:29 10:00:00", "", ""},
		{"2000:02:29 10:00:00", "", "2000-02-29T10:00:00Z"},
		{"2019:04:31 10:00:00", "", ""},
		{"2019:12:31 23:59:59", "999", "2019-12-31T23:59:59.999Z"},
		{"2019:12:31 24:00:00", "", ""},
		{"2019:07:01 12:60:00", "", ""},
		{"2019:06:30 23:59:60", "", ""},
		{"2019:07:00 12:34:56", "", ""},
		{"2019:07", "", ""},
	} {
		tm, ok := exifTime(c.s, c.sub)
		got := ""
		if ok {
			got = tm.Format(time.RFC3339Nano)
		}
		if got != c.want {
			t.Errorf("exifTime(%q, %q) = %q, want %q", c.s, c.sub, got, c.want)
		}
	}
	for s, want := range map[string]int{"+10:00": 600, "-03:30": -210, "+00:00": 0} {
		if o, ok := exifOffset(s); !ok || o != want {
			t.Errorf("exifOffset(%q) = %d, %v", s, o, ok)
		}
	}
	for _, s := range []string{"", "10:00", "+1000", "+99:00", "+10:0x"} {
		if _, ok := exifOffset(s); ok {
			t.Errorf("exifOffset(%q) accepted", s)
		}
	}
}
