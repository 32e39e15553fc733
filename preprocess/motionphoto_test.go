package preprocess

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/video/videotest"
)

// media makes, with ffmpeg, a JPEG still, a short MP4 and, when heif-enc
// is there, a HEIC still ("" otherwise).
func motionMedia(t *testing.T) (jpg, mp4, heic []byte) {
	t.Helper()
	tools := videotest.Tools(t)
	dir := t.TempDir()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=96x64", "-frames:v", "1", filepath.Join(dir, "s.jpg"))
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=96x64:r=10:d=1", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", filepath.Join(dir, "v.mp4"))
	jpg, mp4 = read("s.jpg"), read("v.mp4")
	enc, err := exec.LookPath("heif-enc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("heif-enc not on PATH (Debian: libheif-examples)")
		}
		t.Log("heif-enc not on PATH (Debian: libheif-examples): the HEIC cases are left out")
		return jpg, mp4, nil
	}
	if out, err := exec.Command(enc, filepath.Join(dir, "s.jpg"), "-o", filepath.Join(dir, "s.heic")).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc: %v\n%s", err, out)
	}
	return jpg, mp4, read("s.heic")
}

func joined(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestFindMotionVideo: the video of each layout is found at its exact bytes; files
// that say they are Motion Photos but whose video is gone or elsewhere,
// and plain stills, give none.
func TestFindMotionVideo(t *testing.T) {
	jpg, mp4, heic := motionMedia(t)
	n := strconv.Itoa(len(mp4))
	elements := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description rdf:about="" xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" xmlns:Container="http://ns.google.com/photos/1.0/container/" xmlns:Item="http://ns.google.com/photos/1.0/container/item/">` +
		`<GCamera:MotionPhoto>1</GCamera:MotionPhoto><Container:Directory><rdf:Seq>` +
		`<rdf:li rdf:parseType="Resource"><Container:Item rdf:parseType="Resource"><Item:Semantic>Primary</Item:Semantic><Item:Mime>image/jpeg</Item:Mime></Container:Item></rdf:li>` +
		`<rdf:li rdf:parseType="Resource"><Container:Item rdf:parseType="Resource"><Item:Semantic>MotionPhoto</Item:Semantic><Item:Mime>video/mp4</Item:Mime><Item:Length> ` + n + ` </Item:Length></Container:Item></rdf:li>` +
		`</rdf:Seq></Container:Directory></rdf:Description></rdf:RDF></x:xmpmeta>`
	micro := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description rdf:about="" xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" GCamera:MicroVideo="1" GCamera:MicroVideoVersion="1" GCamera:MicroVideoOffset="` + n + `"/></rdf:RDF></x:xmpmeta>`
	// Samsung's trailer names the marker again, after the video.
	samsungTrailer := joined([]byte("SEFH\x6b\x00\x00\x00\x01\x00\x00\x00"), []byte("MotionPhoto_Data"), []byte("\x00\x00\x00\x00SEFT"))
	// A second item after the video (a depth map, say), 10 bytes long.
	twoItems := strings.Replace(videotest.MotionXMP(len(mp4)), `</rdf:Seq>`,
		`<rdf:li rdf:parseType="Resource"><Container:Item Item:Mime="image/jpeg" Item:Semantic="Depth" Item:Length="10"/></rdf:li></rdf:Seq>`, 1)
	type tc struct {
		name string
		file []byte
	}
	cases := []tc{
		{"Google format 1.0, attributes", joined(videotest.WithXMP(jpg, videotest.MotionXMP(len(mp4))), mp4)},
		{"Google format 1.0, elements", joined(videotest.WithXMP(jpg, elements), mp4)},
		{"an item after the video", joined(videotest.WithXMP(jpg, twoItems), mp4, []byte("0123456789"))},
		{"MicroVideo (MVIMG)", joined(videotest.WithXMP(jpg, micro), mp4)},
		{"Samsung JPEG", joined(jpg, []byte("MotionPhoto_Data"), mp4, samsungTrailer)},
		{"the XMP of a video that is gone", videotest.WithXMP(jpg, videotest.MotionXMP(len(mp4)))},
		{"an XMP length that misses the video", joined(videotest.WithXMP(jpg, videotest.MotionXMP(len(mp4)+7)), mp4)},
		{"junk after the marker", joined(jpg, []byte("MotionPhoto_Data"), bytes.Repeat([]byte{0x41}, 64), samsungTrailer)},
		{"Samsung's marker and video without its trailer", joined(jpg, []byte("MotionPhoto_Data"), mp4)},
		{"a plain JPEG", jpg},
		{"a JPEG with the video appended but nothing saying so", joined(jpg, mp4)},
		{"too short", []byte{0xFF, 0xD8}},
	}
	if heic != nil {
		cases = append(cases,
			tc{"HEIC, mpvd box", joined(heic, bmffBox("mpvd", mp4))},
			tc{"HEIC, an MP4 appended bare (which libheif refuses)", joined(heic, mp4)},
			tc{"a plain HEIC", heic},
		)
	}
	want := map[string]bool{
		"Google format 1.0, attributes": true, "Google format 1.0, elements": true, "an item after the video": true,
		"MicroVideo (MVIMG)": true, "Samsung JPEG": true, "HEIC, mpvd box": true,
	}
	for _, c := range cases {
		v, ok := FindMotionVideo(bytes.NewReader(c.file), int64(len(c.file)))
		if ok != want[c.name] {
			t.Errorf("%s: found %v (%+v), want %v", c.name, ok, v, want[c.name])
			continue
		}
		if ok && !bytes.Equal(c.file[v.Off:v.Off+v.Len], mp4) {
			t.Errorf("%s: the video found is bytes %d+%d, not the MP4 (%d bytes at %d)", c.name, v.Off, v.Len, len(mp4), bytes.Index(c.file, mp4))
		}
		if ok && v.QuickTime {
			t.Errorf("%s: an MP4 taken for QuickTime", c.name)
		}
		if ok {
			// The still decodes as it does without its video.
			base := jpg
			if c.file[0] != 0xFF {
				base = heic
			}
			got, err := Decode(c.file, c.name, 0, false)
			want, werr := Decode(base, c.name, 0, false)
			if err != nil || werr != nil || !bytes.Equal(got.Pix, want.Pix) || got.Rect != want.Rect {
				t.Errorf("%s: the still decodes otherwise with its video (%v, %v)", c.name, err, werr)
			}
		}
	}
}

// TestFindMotionVideoMatchesExiftool: where exiftool (which parses the XMP but
// extracts no video in 12.57) reads a Motion Photo's directory or
// MicroVideoOffset, the video found is the length it reads, at the end of
// the file, in the attribute and the element forms of the XMP.
func TestFindMotionVideoMatchesExiftool(t *testing.T) {
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("exiftool not on PATH (Debian: libimage-exiftool-perl)")
		}
		t.Skip("exiftool not on PATH (Debian: libimage-exiftool-perl)")
	}
	jpg, mp4, _ := motionMedia(t)
	n := strconv.Itoa(len(mp4))
	dir := t.TempDir()
	files := map[string][]byte{
		"attributes.MP.jpg": joined(videotest.WithXMP(jpg, videotest.MotionXMP(len(mp4))), mp4),
		"elements.MP.jpg": joined(videotest.WithXMP(jpg, `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">`+
			`<rdf:Description rdf:about="" xmlns:Container="http://ns.google.com/photos/1.0/container/" xmlns:Item="http://ns.google.com/photos/1.0/container/item/">`+
			`<Container:Directory><rdf:Seq><rdf:li rdf:parseType="Resource"><Container:Item rdf:parseType="Resource"><Item:Semantic>Primary</Item:Semantic></Container:Item></rdf:li>`+
			`<rdf:li rdf:parseType="Resource"><Container:Item rdf:parseType="Resource"><Item:Semantic>MotionPhoto</Item:Semantic><Item:Length>`+n+`</Item:Length></Container:Item></rdf:li>`+
			`</rdf:Seq></Container:Directory></rdf:Description></rdf:RDF></x:xmpmeta>`), mp4),
		"MVIMG_1.jpg": joined(videotest.WithXMP(jpg, `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">`+
			`<rdf:Description rdf:about="" xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" GCamera:MicroVideo="1" GCamera:MicroVideoOffset="`+n+`"/></rdf:RDF></x:xmpmeta>`), mp4),
	}
	var paths []string
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(tool, append([]string{"-j", "-struct", "-XMP-Container:Directory", "-XMP-GCamera:MicroVideoOffset"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("exiftool: %v", err)
	}
	var got []struct {
		SourceFile string
		Directory  []struct {
			Item struct {
				Semantic string
				Length   int64
			}
		}
		MicroVideoOffset int64
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(files) {
		t.Fatalf("exiftool's JSON: %v\n%s", err, out)
	}
	for _, g := range got {
		length := g.MicroVideoOffset
		for _, d := range g.Directory {
			if d.Item.Semantic == "MotionPhoto" {
				length = d.Item.Length
			}
		}
		file := files[filepath.Base(g.SourceFile)]
		v, ok := FindMotionVideo(bytes.NewReader(file), int64(len(file)))
		if length == 0 || !ok || v.Len != length || v.Off+v.Len != int64(len(file)) {
			t.Errorf("%s: found %v %+v; exiftool reads a video of %d bytes (the file is %d)", filepath.Base(g.SourceFile), ok, v, length, len(file))
		}
	}
}
