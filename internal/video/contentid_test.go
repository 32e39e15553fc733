package video_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

func contentID(t *testing.T, data []byte) (string, error) {
	t.Helper()
	return video.ContentID(bytes.NewReader(data), int64(len(data)))
}

// TestContentIDLayouts: the identifier is found in an iPhone's layout
// (moov/meta without version and flags) among other keys, behind an mdat
// with a 64-bit size and one sized "to the end"; it is absent without the
// key, with another data type, and from a file that is no movie.
func TestContentIDLayouts(t *testing.T) {
	const id = "5A3F1B2C-0D4E-4F60-8172-93A4B5C6D7E8"
	live := videotest.LiveMovie("tail", "com.apple.quicktime.make", "Apple", video.ContentIDKey, id,
		"com.apple.quicktime.creationdate", "2024-05-01T10:00:00+0200")
	if got, err := contentID(t, live); err != nil || got != id {
		t.Fatalf("iPhone layout: %q, %v; want %q", got, err, id)
	}

	// ftyp, a 64-bit-sized mdat, then the movie; then the same movie
	// after an mdat whose size is 0 (to the end) cannot be reached.
	ftyp, rest := live[:20], live[20:]
	mdat := binary.BigEndian.AppendUint32(nil, 1)
	mdat = append(mdat, "mdat"...)
	mdat = binary.BigEndian.AppendUint64(mdat, 16+1000)
	mdat = append(mdat, make([]byte, 1000)...)
	big := append(append(append([]byte{}, ftyp...), mdat...), rest...)
	if got, err := contentID(t, big); err != nil || got != id {
		t.Fatalf("after a 64-bit mdat: %q, %v", got, err)
	}
	toEnd := append(append(append([]byte{}, ftyp...), videotest.QTBox("mdat", make([]byte, 100))...), rest...)
	binary.BigEndian.PutUint32(toEnd[20:], 0)
	if got, err := contentID(t, toEnd); !errors.Is(err, video.ErrNoMovie) {
		t.Fatalf("movie behind an mdat to the end: %q, %v; want ErrNoMovie", got, err)
	}

	if got, err := contentID(t, videotest.LiveMovie("", "com.apple.quicktime.make", "Apple")); err != nil || got != "" {
		t.Fatalf("no identifier: %q, %v", got, err)
	}
	binaryData := bytes.Replace(live, []byte{0, 0, 0, 1, 0, 0, 0, 0, '5', 'A'}, []byte{0, 0, 0, 0x15, 0, 0, 0, 0, '5', 'A'}, 1)
	if bytes.Equal(binaryData, live) {
		t.Fatal("test file: data type not found")
	}
	if got, err := contentID(t, binaryData); err != nil || got != "" {
		t.Fatalf("identifier stored as a signed integer type: %q, %v", got, err)
	}
	for _, junk := range [][]byte{nil, []byte("FAKEVIDEO 0,4 one"), []byte("\xff\xd8\xff\xe0 a JPEG")} {
		if got, err := contentID(t, junk); err == nil || got != "" {
			t.Errorf("%q: %q, %v; want an error", junk, got, err)
		}
	}
	// Every prefix gives the identifier or nothing (the free box after
	// the movie is not needed); no flipped byte panics.
	for n := range live {
		got, _ := contentID(t, live[:n])
		if want := ""; n >= len(live)-len("tail")-8 {
			want = id
			if got != want {
				t.Fatalf("prefix of %d bytes: %q, want %q", n, got, want)
			}
		} else if got != "" {
			t.Fatalf("prefix of %d bytes: %q, want nothing", n, got)
		}
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(live)
			bad[n] ^= x
			contentID(t, bad)
		}
	}
}

// TestContentIDFFmpeg: movies made by ffmpeg (which writes the key into
// moov/udta/meta, an ISO full box) at either end of the file give what
// ffprobe reads.
func TestContentIDFFmpeg(t *testing.T) {
	tools := videotest.Tools(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, id string }{
		{"end.mov", "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"},
		{"faststart.mov", "FFFFFFFF-0000-1111-2222-333333333333"},
		{"none.mov", ""},
		{"m4.mp4", "an mp4 with the key"},
	} {
		p := filepath.Join(dir, c.name)
		args := []string{"-f", "lavfi", "-i", "testsrc2=s=64x48:r=10:d=1", "-c:v", "libx264", "-preset", "ultrafast",
			"-pix_fmt", "yuv420p"}
		flags := "use_metadata_tags"
		if c.name == "faststart.mov" {
			flags += "+faststart"
		}
		if c.id != "" {
			args = append(args, "-movflags", flags, "-metadata", video.ContentIDKey+"="+c.id)
		}
		videotest.FFmpeg(t, tools, append(args, p)...)
		out, err := exec.Command(tools.FFprobe, "-v", "error", "-show_entries", "format_tags="+video.ContentIDKey,
			"-of", "default=nw=1:nk=1", p).Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(string(out)); want != c.id {
			t.Fatalf("%s: ffprobe reads %q, the test wrote %q", c.name, want, c.id)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		got, err := video.ContentID(f, st.Size())
		f.Close()
		if err != nil || got != c.id {
			t.Errorf("%s: %q, %v; want %q (as ffprobe)", c.name, got, err, c.id)
		}
	}
}
