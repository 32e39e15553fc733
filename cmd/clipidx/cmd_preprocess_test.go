package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/preprocess"
)

// TestPreprocessCommand runs `clipidx preprocess` on fixture images and
// compares the written tensor with the concatenated reference pixels.
func TestPreprocessCommand(t *testing.T) {
	model := fixtures.TinyModel(t)
	images := []string{"noise_257x231.png", "gradient_256.png", "tiny_50x30.png"}
	refs := []string{"noise.f32", "gradient.f32", "tiny.f32"}
	var want []byte
	var args []string
	for i, name := range images {
		b, err := os.ReadFile(filepath.Join(model, "pixels", refs[i]))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
		args = append(args, filepath.Join(model, "images", name))
	}
	// A model folder without preprocessor_config.json falls back to the
	// defaults, which are the tiny model's values.
	bare := t.TempDir()
	for _, tc := range []struct{ name, model string }{{"config", model}, {"defaults", bare}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "px.f32")
			code := run(append([]string{"--model", tc.model, "preprocess", "--exif=false", "-o", out}, args...))
			if code != 0 {
				t.Fatalf("exit code %d", code)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("output differs from the reference pixels (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
}

func TestPreprocessCommandErrors(t *testing.T) {
	model := fixtures.TinyModel(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.jpg")
	if err := os.WriteFile(text, []byte("hello, this is not a photo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(badCfg, "preprocessor_config.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(model, "images", "gradient_256.png")
	out := filepath.Join(dir, "out.f32")
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"no output flag", []string{"--model", model, "preprocess", good}, 2},
		{"no images", []string{"--model", model, "preprocess", "-o", out}, 2},
		{"text named jpg", []string{"--model", model, "preprocess", "-o", out, good, text}, 1},
		{"missing file", []string{"--model", model, "preprocess", "-o", out, filepath.Join(dir, "absent.png")}, 1},
		{"malformed config", []string{"--model", badCfg, "preprocess", "-o", out, good}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := run(tc.args); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written by a failing run", out)
			}
		})
	}
	// The error names the offending file.
	_, err := preprocessAll(newTestProcessor(t, model), []string{good, text}, 2)
	if err == nil || !strings.Contains(err.Error(), text) {
		t.Errorf("error %v does not name %s", err, text)
	}
}

func newTestProcessor(t *testing.T, model string) *preprocess.Processor {
	t.Helper()
	cfg, err := preprocess.LoadConfig(model)
	if err != nil {
		t.Fatal(err)
	}
	return preprocess.New(cfg, preprocess.Options{})
}

// TestPreprocessOutputThroughLink writes through a symbolic link instead of
// replacing it (a device or FIFO given as -o is likewise written, never
// replaced), and gives a new file the umask's mode, not 0600.
func TestPreprocessOutputThroughLink(t *testing.T) {
	model := fixtures.TinyModel(t)
	img := filepath.Join(model, "images", "tiny_50x30.png")
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.f32"), filepath.Join(dir, "link.f32")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if code := run([]string{"--model", model, "preprocess", "--exif=false", "-o", link, img}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced (%v, %v)", fi.Mode(), err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Size() != 3*224*224*4 {
		t.Fatalf("target not written through the link: %v %v", fi, err)
	}
	fresh := filepath.Join(dir, "fresh.f32")
	if code := run([]string{"--model", model, "preprocess", "--exif=false", "-o", fresh, img}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm()&0o044 == 0 && fi.Mode().Perm() == 0o600 {
		t.Fatalf("new output has mode %v (%v), want what os.Create gives", fi.Mode(), err)
	}
}
