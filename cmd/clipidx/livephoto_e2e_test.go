package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// TestLivePhotosEndToEnd runs the binary on an iPhone-like folder made by
// ffmpeg: a Live Photo (a JPEG with Apple's MakerNote and a movie with the
// same content identifier), a photo and movie of one name whose
// identifiers differ, and a plain clip. The Live Photo's movie is left out
// (one line in build's output, counted by status apart from failures,
// absent from search and from status --failed); the others are videos.
// Once its still is deleted, the movie is a video too.
func TestLivePhotosEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	tools := videotest.Tools(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	lib := filepath.Join(root, "DCIM", "100APPLE")
	db := filepath.Join(root, "index.db")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	movie := func(name, id, src string) {
		args := []string{"-f", "lavfi", "-i", src + "=s=192x144:r=15:d=2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"}
		if id != "" {
			args = append(args, "-movflags", "use_metadata_tags", "-metadata", video.ContentIDKey+"="+id)
		}
		videotest.FFmpeg(t, tools, append(args, filepath.Join(lib, name))...)
	}
	still := func(name, id, src string) {
		tmp := filepath.Join(root, name+".plain.jpg")
		videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", src+"=s=256x192", "-frames:v", "1", tmp)
		plain, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib, name), videotest.WithEXIF(plain, videotest.AppleEXIF(id, false)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const live, other = "8C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E", "8C1D2E3F-4A5B-4C6D-8E7F-000000000000"
	still("IMG_0001.JPG", live, "testsrc2")
	movie("IMG_0001.MOV", live, "testsrc2")
	still("IMG_0002.JPG", other, "smptebars")
	movie("IMG_0002.MOV", other+"-not-the-same", "smptebars")
	movie("clip.mov", "", "rgbtestsrc")

	g := []string{"--db", db, "--model", model, "--device", "reference"}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return e2eRun(t, bin, append(append([]string{}, g...), args...)...)
	}
	out, errs, code := run("build", lib)
	if code != 0 || !strings.HasPrefix(out, "added 4, updated 0, unchanged 0, reused 0, removed 0, failed 0\n") ||
		!strings.Contains(out, "Live Photos: 1 movie left out, its still is indexed") {
		t.Fatalf("build: %d\n%s%s", code, out, errs)
	}
	paths := func() []string {
		t.Helper()
		out, errs, code := run("search", "--paths-only", "-k", "100", "a picture")
		if code != 0 {
			t.Fatalf("search: %d %s%s", code, out, errs)
		}
		p := strings.Fields(out)
		slices.Sort(p)
		return p
	}
	want := []string{filepath.Join(lib, "IMG_0001.JPG"), filepath.Join(lib, "IMG_0002.JPG"), filepath.Join(lib, "IMG_0002.MOV"), filepath.Join(lib, "clip.mov")}
	if got := paths(); !slices.Equal(got, want) {
		t.Errorf("search finds %q, want %q", got, want)
	}
	out, _, _ = run("status")
	if !strings.Contains(out, "live photos: 1 movie left out, its still is indexed\n") || !strings.Contains(out, "failed:      0\n") {
		t.Errorf("status:\n%s", out)
	}
	out, _, _ = run("status", "--json")
	var st struct {
		Failed     int
		LiveVideos int `json:"live_videos"`
		Videos     int
	}
	if json.Unmarshal([]byte(out), &st) != nil || st.Failed != 0 || st.LiveVideos != 1 || st.Videos != 2 {
		t.Errorf("status --json: %s", out)
	}
	if out, errs, code = run("status", "--failed"); code != 0 || out != "" {
		t.Errorf("status --failed: %d %q %s", code, out, errs)
	}

	out, errs, code = run("search", "--json", "-k", "100", "a picture")
	var hits []struct{ Path, Live, Video string }
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 4 {
		t.Fatalf("search --json: %d %s%s", code, out, errs)
	}
	for _, h := range hits {
		want := ""
		if h.Path == filepath.Join(lib, "IMG_0001.JPG") {
			want = filepath.Join(lib, "IMG_0001.MOV")
		}
		if h.Live != want {
			t.Errorf("search --json: %s has \"live\": %q, want %q", h.Path, h.Live, want)
		}
	}

	// kind:live lists the Live Photo's still alone.
	if out, errs, code := run("search", "--paths-only", "kind:live"); code != 0 || out != filepath.Join(lib, "IMG_0001.JPG")+"\n" {
		t.Errorf("search kind:live: %d %q%s", code, out, errs)
	}

	out, errs, code = run("build", "--json", lib)
	var sum map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum["unchanged"] != float64(5) || sum["live_videos"] != nil {
		t.Errorf("second build: %d %s%s", code, out, errs)
	}

	if err := os.Remove(filepath.Join(lib, "IMG_0001.JPG")); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run("build", lib)
	if code != 0 || !strings.HasPrefix(out, "added 0, updated 1, unchanged 3, reused 0, removed 1, failed 0\n") || strings.Contains(out, "Live Photos") {
		t.Errorf("build after the still was deleted: %d\n%s%s", code, out, errs)
	}
	want = []string{filepath.Join(lib, "IMG_0001.MOV"), filepath.Join(lib, "IMG_0002.JPG"), filepath.Join(lib, "IMG_0002.MOV"), filepath.Join(lib, "clip.mov")}
	if got := paths(); !slices.Equal(got, want) {
		t.Errorf("after the still was deleted, search finds %q, want %q", got, want)
	}
	if out, errs, code := run("search", "--paths-only", "kind:live"); code != 0 || out != "" {
		t.Errorf("search kind:live with no Live Photo left: %d %q%s", code, out, errs)
	}
}

// TestMotionPhotosEndToEnd: a Motion Photo (a Pixel's JPEG with its video
// appended, as Google's format lays it out) is indexed as its still, and
// search --json says it carries a video ("motion": true); a plain JPEG
// does not.
func TestMotionPhotosEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	tools := videotest.Tools(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	lib := filepath.Join(root, "Camera")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	jpg, mp4 := filepath.Join(root, "s.jpg"), filepath.Join(root, "v.mp4")
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=256x192", "-frames:v", "1", jpg)
	videotest.FFmpeg(t, tools, "-f", "lavfi", "-i", "testsrc2=s=256x192:r=15:d=1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", mp4)
	still, err := os.ReadFile(jpg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(mp4)
	if err != nil {
		t.Fatal(err)
	}
	motion, plain := filepath.Join(lib, "PXL_20240601_101010123.MP.jpg"), filepath.Join(lib, "plain.jpg")
	if err := os.WriteFile(motion, append(videotest.WithXMP(still, videotest.MotionXMP(len(v))), v...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, still, 0o644); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "index.db"), "--model", model, "--device", "reference"}
	if out, errs, code := e2eRun(t, bin, append(slices.Clone(g), "build", lib)...); code != 0 || !strings.HasPrefix(out, "added 2,") {
		t.Fatalf("build: %d\n%s%s", code, out, errs)
	}
	out, errs, code := e2eRun(t, bin, append(slices.Clone(g), "search", "--json", "-k", "10", "a picture")...)
	var hits []struct {
		Path   string
		Motion bool
		Live   string
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 2 {
		t.Fatalf("search --json: %d %s%s", code, out, errs)
	}
	for _, h := range hits {
		if h.Motion != (h.Path == motion) || h.Live != "" {
			t.Errorf("search --json: %s has \"motion\": %v, \"live\": %q; want motion only for %s", h.Path, h.Motion, h.Live, filepath.Base(motion))
		}
	}
	// kind:motion lists it alone; with words, ranks it alone.
	for _, q := range []string{"kind:motion", "a picture kind:motion"} {
		out, errs, code := e2eRun(t, bin, append(slices.Clone(g), "search", "--paths-only", q)...)
		if code != 0 || out != motion+"\n" {
			t.Errorf("search %q: %d %q%s, want %s alone", q, code, out, errs, motion)
		}
	}
	if out, _, _ := e2eRun(t, bin, append(slices.Clone(g), "status")...); !strings.Contains(out, "motion:      1 Motion Photo (a video inside the still)\n") {
		t.Errorf("status:\n%s", out)
	}
	out, _, _ = e2eRun(t, bin, append(slices.Clone(g), "status", "--json")...)
	var st struct {
		Metadata struct {
			Motion int `json:"motion_photos"`
		}
	}
	if json.Unmarshal([]byte(out), &st) != nil || st.Metadata.Motion != 1 {
		t.Errorf("status --json: %s", out)
	}
}
