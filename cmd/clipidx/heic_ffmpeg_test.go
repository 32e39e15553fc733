package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestHEICThroughFFmpeg: with ffmpeg found, embed and build decode HEICs'
// HEVC through it (seen in a wrapper's log) and give the embeddings the
// built-in decoder gives; CLIPIDX_HEVC=builtin keeps ffmpeg out.
func TestHEICThroughFFmpeg(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the ffmpeg wrapper is a shell script")
	}
	model := fixtures.TinyModel(t)
	var real [2]string
	for i, name := range []string{"ffmpeg", "ffprobe"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found (Debian: apt-get install ffmpeg)", name)
			}
			t.Skipf("%s not found (Debian: apt-get install ffmpeg)", name)
		}
		real[i] = p
	}
	dir := t.TempDir()
	tools, photos, log := filepath.Join(dir, "tools"), filepath.Join(dir, "photos"), filepath.Join(dir, "ffmpeg.log")
	for _, d := range []string{tools, photos} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wrap := "#!/bin/sh\necho \"$@\" >> '" + log + "'\nexec '" + real[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(tools, "ffmpeg"), []byte(wrap), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real[1], filepath.Join(tools, "ffprobe")); err != nil {
		t.Fatal(err)
	}
	heics, err := filepath.Glob(filepath.Join("..", "..", "preprocess", "testdata", "heif", "*.heic"))
	if err != nil || len(heics) < 4 {
		t.Fatalf("test HEICs: %v, %v", heics, err)
	}
	var args []string
	for _, h := range heics {
		data, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(photos, filepath.Base(h))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--image", p)
	}
	hevcRuns := func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "-f hevc")
	}
	embed := func() []byte {
		t.Helper()
		out, errs, err := runModelCmd(append([]string{"--model", model, "embed", "--format", "json"}, args...)...)
		if err != nil {
			t.Fatalf("embed: %v\n%s", err, errs)
		}
		return []byte(out)
	}
	t.Setenv("CLIPIDX_FFMPEG", tools)
	t.Setenv("CLIPIDX_HEVC", "builtin")
	builtin := embed()
	if n := hevcRuns(); n != 0 {
		t.Fatalf("CLIPIDX_HEVC=builtin: ffmpeg ran %d times for HEVC", n)
	}
	t.Setenv("CLIPIDX_HEVC", "")
	viaFFmpeg := embed()
	if n := hevcRuns(); n != len(heics) {
		t.Fatalf("embed of %d HEICs: ffmpeg decoded HEVC %d times", len(heics), n)
	}
	var a, b struct {
		Items []struct {
			Input     string    `json:"input"`
			Embedding []float32 `json:"embedding"`
		} `json:"items"`
	}
	if json.Unmarshal(builtin, &a) != nil || json.Unmarshal(viaFFmpeg, &b) != nil || len(a.Items) != len(heics) || len(b.Items) != len(heics) {
		t.Fatalf("embed output:\n%s\n%s", builtin, viaFFmpeg)
	}
	for i := range a.Items {
		for k := range a.Items[i].Embedding {
			if a.Items[i].Embedding[k] != b.Items[i].Embedding[k] {
				t.Fatalf("%s: embedding differs at %d: %v through ffmpeg, %v built in", a.Items[i].Input, k,
					b.Items[i].Embedding[k], a.Items[i].Embedding[k])
			}
		}
	}
	// A build with --ffmpeg reads them through it too.
	t.Setenv("CLIPIDX_FFMPEG", "")
	before := hevcRuns()
	out, errs, code := runCLI(t, "--db", filepath.Join(dir, "index.db"), "--model", model, "build", "--json", "--ffmpeg", tools, photos)
	if code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	if n := hevcRuns() - before; n != len(heics) {
		t.Errorf("build of %d HEICs: ffmpeg decoded HEVC %d times\n%s", len(heics), n, out)
	}
	// An ffmpeg that fails every decode: the build reads the HEICs with
	// the built-in decoder and says so; info names the failure.
	broken := filepath.Join(dir, "broken")
	if err := os.Mkdir(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	fail := "#!/bin/sh\nif [ \"$1\" = -hide_banner ]; then exec '" + real[0] + "' \"$@\"; fi\nexit 1\n"
	if err := os.WriteFile(filepath.Join(broken, "ffmpeg"), []byte(fail), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real[1], filepath.Join(broken, "ffprobe")); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runCLI(t, "--db", filepath.Join(dir, "index2.db"), "--model", model, "build", "--ffmpeg", broken, photos)
	if code != 0 || !strings.Contains(out, "added "+strconv.Itoa(len(heics))) || !strings.Contains(errs, "ffmpeg did not decode") {
		t.Errorf("build with a failing ffmpeg: exit %d\n%s\n%s", code, out, errs)
	}
	t.Setenv("CLIPIDX_FFMPEG", broken)
	out, _, _ = runCLI(t, "info")
	if !strings.Contains(out, "fails its check") {
		t.Errorf("info with a failing ffmpeg:\n%s", out)
	}
}
