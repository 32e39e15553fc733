// Package videotest makes test videos with ffmpeg's own sources (lavfi),
// so that no video is checked in. A test that needs ffmpeg calls Tools:
// without it the test is skipped with a message, except under CI=true,
// where it fails.
package videotest

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/video"
)

// Tools finds ffprobe and ffmpeg on PATH, or skips the test (fails it
// under CI=true).
func Tools(t testing.TB) *video.Tools {
	t.Helper()
	tools, err := video.Find("")
	if err != nil {
		msg := "video test needs ffmpeg and ffprobe (Debian: apt-get install ffmpeg): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return tools
}

// FFmpeg runs ffmpeg with args (quiet, overwriting) and fails the test
// when it fails.
func FFmpeg(t testing.TB, tools *video.Tools, args ...string) {
	t.Helper()
	all := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...)
	out, err := exec.Command(tools.FFmpeg, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Cuts writes to path an H.264 clip of solid colours, each held for
// secs seconds (a cut at each change), size WxH at 25 fps.
func Cuts(t testing.TB, tools *video.Tools, path, size string, secs float64, colours ...string) {
	t.Helper()
	CutsWith(t, tools, path, size, secs, nil, colours...)
}

// CutsWith is Cuts with extra output options (keyframe spacing: "-g",
// "25") before the path.
func CutsWith(t testing.TB, tools *video.Tools, path, size string, secs float64, extra []string, colours ...string) {
	t.Helper()
	var args []string
	var chain strings.Builder
	for i, c := range colours {
		args = append(args, "-f", "lavfi", "-i", "color=c="+c+":s="+size+":r=25:d="+ftoa(secs))
		chain.WriteString("[" + itoa(i) + ":v]")
	}
	chain.WriteString("concat=n=" + itoa(len(colours)) + ":v=1:a=0[v]")
	args = append(args, "-filter_complex", chain.String(), "-map", "[v]", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p")
	args = append(append(args, extra...), path)
	FFmpeg(t, tools, args...)
}

// Bars writes to path an H.264 clip of ffmpeg's moving test pattern
// (testsrc2), size WxH, secs long, with extra output options (rotation
// metadata, sample aspect) before the path.
func Bars(t testing.TB, tools *video.Tools, path, size string, secs float64, extra ...string) {
	t.Helper()
	args := []string{"-f", "lavfi", "-i", "testsrc2=s=" + size + ":r=25:d=" + ftoa(secs),
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"}
	args = append(append(args, extra...), path)
	FFmpeg(t, tools, args...)
}

// Dir returns t.TempDir() joined with elem, the folders made.
func Dir(t testing.TB, elem ...string) string {
	d := filepath.Join(append([]string{t.TempDir()}, elem...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func itoa(i int) string { return ftoa(float64(i)) }

func ftoa(f float64) string {
	s := strings.TrimRight(strings.TrimRight(strconvF(f), "0"), ".")
	if s == "" {
		return "0"
	}
	return s
}

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// QTBox is a QuickTime box: 4-byte size, type, body.
func QTBox(typ string, body ...[]byte) []byte {
	n := 8
	for _, b := range body {
		n += len(b)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(n))
	out = append(out, typ...)
	for _, b := range body {
		out = append(out, b...)
	}
	return out
}

// LiveMovie is the box layout of an iPhone's Live Photo movie without its
// media: ftyp "qt  ", a moov whose QuickTime-style meta (no version and
// flags) holds the mdta keys and values given (key, value, key, value...),
// then a free box with tail (what a fake sampler reads).
func LiveMovie(tail string, kv ...string) []byte {
	keys := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(len(kv)/2))
	var ilst []byte
	for i := 0; i+1 < len(kv); i += 2 {
		keys = append(keys, QTBox("mdta", []byte(kv[i]))...)
		data := QTBox("data", []byte{0, 0, 0, 1, 0, 0, 0, 0}, []byte(kv[i+1]))
		var idx [4]byte
		binary.BigEndian.PutUint32(idx[:], uint32(i/2+1))
		ilst = append(ilst, QTBox(string(idx[:]), data)...)
	}
	hdlr := QTBox("hdlr", make([]byte, 8), []byte("mdta"), make([]byte, 13))
	meta := QTBox("meta", hdlr, QTBox("keys", keys), QTBox("ilst", ilst))
	ftyp := QTBox("ftyp", []byte("qt  \x00\x00\x00\x00qt  "))
	mvhd := QTBox("mvhd", make([]byte, 100))
	return append(append(ftyp, QTBox("moov", mvhd, meta)...), QTBox("free", []byte(tail))...)
}

// AppleEXIF is a TIFF-structured EXIF block as an iPhone writes it, in
// either byte order: IFD0 with Make "Apple" and Model, an EXIF IFD whose
// MakerNote is Apple's ("Apple iOS\0", version 1, "MM", then a big-endian
// IFD whose offsets count from the MakerNote's start) with the Live
// Photo's content identifier (tag 0x0011) when id is not "".
func AppleEXIF(id string, littleEndian bool) []byte {
	var bo binary.AppendByteOrder = binary.BigEndian
	head := []byte("MM\x00\x2a\x00\x00\x00\x08")
	if littleEndian {
		bo, head = binary.LittleEndian, []byte("II\x2a\x00\x08\x00\x00\x00")
	}
	// The MakerNote: two entries (MakerNoteVersion, ContentIdentifier).
	mn := []byte("Apple iOS\x00\x00\x01MM")
	be := binary.BigEndian
	ascii := append([]byte(id), 0)
	entries := [][]byte{entry(be, 0x0001, 9, 1, 14)}
	if id != "" {
		entries = append(entries, entry(be, 0x0011, 2, uint32(len(ascii)), uint32(14+2+12*2+4)))
	}
	mn = be.AppendUint16(mn, uint16(len(entries)))
	for _, e := range entries {
		mn = append(mn, e...)
	}
	mn = be.AppendUint32(mn, 0)
	if id != "" {
		mn = append(mn, ascii...)
	}
	// IFD0 at 8: Make, Model, ExifIFD; values after it; then the EXIF IFD.
	make_, model := []byte("Apple\x00"), []byte("iPhone 15 Pro\x00")
	ifd0 := 8 + 2 + 3*12 + 4
	exifAt := ifd0 + len(make_) + len(model)
	mnAt := exifAt + 2 + 12 + 4
	out := append([]byte{}, head...)
	out = bo.AppendUint16(out, 3)
	out = append(out, entry(bo, 0x010f, 2, uint32(len(make_)), uint32(ifd0))...)
	out = append(out, entry(bo, 0x0110, 2, uint32(len(model)), uint32(ifd0+len(make_)))...)
	out = append(out, entry(bo, 0x8769, 4, 1, uint32(exifAt))...)
	out = bo.AppendUint32(out, 0)
	out = append(append(out, make_...), model...)
	out = bo.AppendUint16(out, 1)
	out = append(out, entry(bo, 0x927c, 7, uint32(len(mn)), uint32(mnAt))...)
	out = bo.AppendUint32(out, 0)
	return append(out, mn...)
}

// entry is a 12-byte IFD entry whose value (or its offset) is v.
func entry(bo binary.AppendByteOrder, tag, typ uint16, count, v uint32) []byte {
	e := bo.AppendUint16(nil, tag)
	e = bo.AppendUint16(e, typ)
	e = bo.AppendUint32(e, count)
	if typ == 3 && count == 1 {
		return append(bo.AppendUint16(e, uint16(v)), 0, 0)
	}
	return bo.AppendUint32(e, v)
}

// WithEXIF returns a JPEG (from image/jpeg or any encoder writing SOI
// first) with the EXIF block tiff in an APP1 segment after its SOI.
func WithEXIF(jpg, tiff []byte) []byte {
	seg := append([]byte("Exif\x00\x00"), tiff...)
	app1 := []byte{0xff, 0xe1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}
	out := append([]byte{}, jpg[:2]...)
	out = append(append(out, app1...), seg...)
	return append(out, jpg[2:]...)
}

// WithXMP returns a JPEG (SOI first) with the XMP packet xmp in an APP1
// segment after its SOI.
func WithXMP(jpg []byte, xmp string) []byte {
	seg := append([]byte("http://ns.adobe.com/xap/1.0/\x00"), xmp...)
	app1 := []byte{0xff, 0xe1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}
	out := append([]byte{}, jpg[:2]...)
	out = append(append(out, app1...), seg...)
	return append(out, jpg[2:]...)
}

// MotionXMP is the XMP of a Motion Photo (Google's format 1.0, as a
// Pixel writes it) whose appended video is videoLen bytes long.
func MotionXMP(videoLen int) string {
	return `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description rdf:about="" xmlns:Camera="http://ns.google.com/photos/1.0/camera/"` +
		` xmlns:Container="http://ns.google.com/photos/1.0/container/" xmlns:Item="http://ns.google.com/photos/1.0/container/item/"` +
		` Camera:MotionPhoto="1" Camera:MotionPhotoVersion="1" Camera:MotionPhotoPresentationTimestampUs="500000">` +
		`<Container:Directory><rdf:Seq>` +
		`<rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="image/jpeg" Item:Semantic="Primary" Item:Length="0" Item:Padding="0"/></rdf:li>` +
		`<rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="video/mp4" Item:Semantic="MotionPhoto" Item:Length="` + itoa(videoLen) + `"/></rdf:li>` +
		`</rdf:Seq></Container:Directory></rdf:Description></rdf:RDF></x:xmpmeta>`
}
