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
		{"no images", []string{"--model", model, "preprocess", "-o", out}, 1},
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
