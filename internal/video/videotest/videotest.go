// Package videotest makes test videos with ffmpeg's own sources (lavfi),
// so that no video is checked in. A test that needs ffmpeg calls Tools:
// without it the test is skipped with a message, except under CI=true,
// where it fails.
package videotest

import (
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
