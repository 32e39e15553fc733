package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestVideoEndToEnd runs the binary on real clips made by ffmpeg: build
// indexes their frames and names each hostile file's failure; an image
// query with the PNG of a cut's frame finds that video at that time;
// search groups frames by video; status counts them; a build without
// ffmpeg skips new videos with one note, keeps the recorded ones, and the
// next build with ffmpeg picks the new ones up.
func TestVideoEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	tools := videotest.Tools(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	vids := filepath.Join(root, "videos")
	db := filepath.Join(root, "index.db")
	if err := os.MkdirAll(filepath.Join(vids, "bad"), 0o755); err != nil {
		t.Fatal(err)
	}
	clip := filepath.Join(vids, "cuts.mp4")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "color=c=red:s=320x240:r=25:d=4",
		"-f", "lavfi", "-i", "smptebars=s=320x240:r=25:d=4", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4",
		"-filter_complex", "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]", "-map", "[v]", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", clip)
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vids, "bad", "truncated.mp4"), data[:len(data)/5], 0o644); err != nil {
		t.Fatal(err)
	}
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", filepath.Join(vids, "bad", "voice.mov"))
	// The bars' frame at the cut, as a PNG that ffmpeg writes.
	still := filepath.Join(root, "bars.png")
	videotest.FFmpeg(t, tools, "-ss", "4", "-i", clip, "-frames:v", "1", still)

	g := []string{"--db", db, "--model", model, "--device", "reference"}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return e2eRun(t, bin, append(append([]string{}, g...), args...)...)
	}
	out, errs, code := run("build", "--video-interval", "3s", vids)
	if code != 0 || !strings.HasPrefix(out, "added 1, updated 0, unchanged 0, reused 0, removed 0, failed 2\n") || !strings.Contains(out, "video frames written: ") {
		t.Fatalf("build: %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"truncated.mp4: " + video.ErrNotVideo.Error(), "voice.mov: " + video.ErrNoVideoStream.Error()} {
		if !strings.Contains(errs, want) {
			t.Errorf("build's failures lack %q:\n%s", want, errs)
		}
	}

	out, errs, code = run("search", "--json", "--image", still, "-k", "1")
	var hits []struct {
		Path  string
		Video string
		Time  *float64
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 1 {
		t.Fatalf("search --image: %d %s%s", code, out, errs)
	}
	if h := hits[0]; h.Video != clip || h.Time == nil || *h.Time < 4 || *h.Time >= 4+3 || h.Path != h.Video+"#t="+strings.TrimPrefix(h.Path, h.Video+"#t=") {
		t.Errorf("the bars' still found %+v, want %s within 3 s after 4 s", h, clip)
	}
	grouped, _, _ := run("search", "--paths-only", "a picture")
	every, _, _ := run("search", "--frames", "a picture")
	if grouped != clip+"\n" || strings.Count(every, clip+"#t=") < 3 {
		t.Errorf("grouped paths %q, want the video once; --frames %q, want every frame", grouped, every)
	}
	out, _, _ = run("status", "--json")
	var st struct{ Videos, Frames, Failed int }
	if json.Unmarshal([]byte(out), &st) != nil || st.Videos != 1 || st.Frames < 3 || st.Failed != 2 {
		t.Errorf("status %s: want 1 video, its frames, 2 failed", out)
	}

	// No ffmpeg on PATH: a new video is skipped with one note; the
	// recorded one keeps its frames. --ffmpeg naming a folder without it
	// is an error.
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", filepath.Join(vids, "new.mkv"))
	t.Setenv("PATH", t.TempDir())
	out, errs, code = run("build", vids)
	if code != 0 || !strings.HasPrefix(out, "added 0, updated 0, unchanged 3, ") || !strings.Contains(out, "skipped 1 video: ffmpeg and ffprobe") || strings.Count(out, "skipped") != 1 {
		t.Errorf("build without ffmpeg: %d\n%s%s", code, out, errs)
	}
	if out, _, _ = run("status", "--json"); json.Unmarshal([]byte(out), &st) != nil || st.Videos != 1 {
		t.Errorf("after a build without ffmpeg: %s", out)
	}
	if _, errs, code = run("build", "--ffmpeg", t.TempDir(), vids); code == 0 || !strings.Contains(errs, "ffmpeg not found") {
		t.Errorf("--ffmpeg with an empty folder: %d %s", code, errs)
	}
	out, errs, code = run("build", "--ffmpeg", filepath.Dir(tools.FFmpeg), vids)
	if code != 0 || !strings.HasPrefix(out, "added 1, updated 0, unchanged 3, ") {
		t.Errorf("build with --ffmpeg: %d\n%s%s", code, out, errs)
	}
	if out, _, _ = run("status", "--json"); json.Unmarshal([]byte(out), &st) != nil || st.Videos != 2 {
		t.Errorf("after the build with ffmpeg: %s", out)
	}
}
