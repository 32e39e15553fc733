package preprocess

import (
	"bytes"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestContentIDMatchesExiftool: the content identifier of an Apple
// MakerNote, in a JPEG whose EXIF is big- or little-endian and in a HEIC
// (its EXIF copied there by exiftool), is what exiftool reads as
// ContentIdentifier (MediaGroupUUID in older versions), whole file or MetaBytes; none where exiftool finds
// none (a MakerNote without the tag, another maker's, none at all).
func TestContentIDMatchesExiftool(t *testing.T) {
	tool := exiftoolNeed(t)
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, testPicture(40, 24), nil); err != nil {
		t.Fatal(err)
	}
	plain := buf.Bytes()
	files := map[string][]byte{
		"be.jpg":    videotest.WithEXIF(plain, videotest.AppleEXIF("7E0D1C2B-3A49-4857-9665-748392A1B0C9", false)),
		"le.jpg":    videotest.WithEXIF(plain, videotest.AppleEXIF("0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", true)),
		"noid.jpg":  videotest.WithEXIF(plain, videotest.AppleEXIF("", false)),
		"other.jpg": videotest.WithEXIF(plain, bytes.Replace(videotest.AppleEXIF("11111111-2222", false), []byte("Apple iOS"), []byte("Banana OS"), 1)),
		"bare.jpg":  plain,
	}
	var paths []string
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	enc := heifNeedTool(t, "heif-enc")
	src := filepath.Join(dir, "src.png")
	var pb bytes.Buffer
	if err := jpeg.Encode(&pb, testPicture(64, 48), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src+".jpg", pb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	heic := filepath.Join(dir, "live.heic")
	if out, err := exec.Command(enc, src+".jpg", "-o", heic).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc: %v\n%s", err, out)
	}
	if out, err := exec.Command(tool, "-q", "-overwrite_original", "-tagsfromfile", filepath.Join(dir, "be.jpg"),
		"-exif:all", "-makernotes:all", heic).CombinedOutput(); err != nil {
		t.Fatalf("exiftool copying the EXIF into the HEIC: %v\n%s", err, out)
	}
	paths = append(paths, heic)
	ex := exiftoolRead(t, tool, paths)
	withID := 0
	for _, p := range paths {
		want := ""
		// Tag 0x0011 is ContentIdentifier in newer exiftools, MediaGroupUUID
		// in 12.57 (Debian 12).
		if v, ok := first(ex[p], "MakerNotes:ContentIdentifier", "MakerNotes:MediaGroupUUID"); ok {
			want = text(v)
			withID++
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := ReadMeta(data).ContentID; got != want {
			t.Errorf("%s: content identifier %q, exiftool reads %q", filepath.Base(p), got, want)
		}
		head, err := MetaBytes(bytes.NewReader(data), int64(len(data)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := ReadMeta(head).ContentID; got != want {
			t.Errorf("%s: content identifier from MetaBytes %q, exiftool reads %q", filepath.Base(p), got, want)
		}
	}
	if withID != 3 { // be.jpg, le.jpg and the HEIC
		t.Errorf("exiftool found a content identifier in %d files, want 3 (the test files are not what they should be)", withID)
	}
}
