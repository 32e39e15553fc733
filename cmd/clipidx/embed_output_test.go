package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestEmbedInvalidEmbedding: NaN embeddings fail embed, naming the model
// folder and the input, and nothing is written (JSON once said only
// "json: unsupported value: NaN"; f32 wrote the NaNs).
func TestEmbedInvalidEmbedding(t *testing.T) {
	img := filepath.Join(fixtures.TinyModel(t), "images", "gradient_256.png")
	both := nanModel(t, "visual_projection.weight", "text_projection.weight")
	for _, tc := range []struct {
		name  string
		model string
		args  []string
		want  string
	}{
		{"text json", both, []string{"--text", "hi", "--format", "json"}, `for text "hi"`},
		{"text f32", both, []string{"--text", "hi", "-o", "OUT"}, `for text "hi"`},
		{"image f32", nanModel(t, "visual_projection.weight"), []string{"--text", "hi", "--image", img, "-o", "OUT"}, "for image " + img},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.f32")
			args := append([]string{"--model", tc.model, "embed"}, tc.args...)
			if i := slices.Index(args, "OUT"); i >= 0 {
				args[i] = out
			}
			stdout, errOut, code := runCLI(t, args...)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q: want exit 1 and nothing printed", code, stdout)
			}
			if !strings.Contains(errOut, "the model in "+tc.model+" returned an invalid embedding "+tc.want) {
				t.Errorf("stderr %q does not name the model folder and the input", errOut)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written (%v)", out, err)
			}
		})
	}
}

// TestEmbedJSONInputBytes: an input that is not UTF-8 keeps its bytes in
// "input_bytes", as build, status and search keep a path's in
// "path_bytes"; a UTF-8 input has none.
func TestEmbedJSONInputBytes(t *testing.T) {
	model := fixtures.TinyModel(t)
	data, err := os.ReadFile(filepath.Join(model, "images", "gradient_256.png"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad\xff.png")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, errOut, code := runCLI(t, "--model", model, "embed", "--format", "json", "--image", bad, "--text", "caf\xe9", "--text", "café")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Items []struct {
			Input      string `json:"input"`
			InputBytes []byte `json:"input_bytes"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Items) != 3 {
		t.Fatalf("%v, %d items:\n%s", err, len(doc.Items), stdout)
	}
	for i, want := range []string{bad, "caf\xe9", ""} {
		if got := string(doc.Items[i].InputBytes); got != want {
			t.Errorf("item %d (%q): input_bytes %q, want %q", i, doc.Items[i].Input, got, want)
		}
	}
	if strings.Count(stdout, `"input_bytes"`) != 2 {
		t.Errorf("want input_bytes on the two inputs that are not UTF-8 only:\n%s", stdout)
	}
}

// TestTokenizeJSONTextBytes: tokenize --json keeps the bytes of a text
// that is not UTF-8 in "text_bytes".
func TestTokenizeJSONTextBytes(t *testing.T) {
	stdout, errOut, code := runCLI(t, "--model", fixtures.TinyModel(t), "tokenize", "--json", "caf\xe9", "café")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var recs []struct {
		Text      string `json:"text"`
		TextBytes []byte `json:"text_bytes"`
	}
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil || len(recs) != 2 {
		t.Fatalf("%v, %d records:\n%s", err, len(recs), stdout)
	}
	if string(recs[0].TextBytes) != "caf\xe9" || recs[1].TextBytes != nil {
		t.Errorf("text_bytes %q and %q, want %q and none:\n%s", recs[0].TextBytes, recs[1].TextBytes, "caf\xe9", stdout)
	}
}

// TestEmbedOutputCheckedFirst: an output that cannot be created is named
// (the file asked for, never a temporary name) before any work: here the
// image does not exist either, and the output is what the error is about.
func TestEmbedOutputCheckedFirst(t *testing.T) {
	model := fixtures.TinyModel(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "missing", "x.f32")
	for _, image := range []string{filepath.Join(dir, "nothing.png"), filepath.Join(model, "images", "gradient_256.png")} {
		_, errOut, code := runCLI(t, "--model", model, "embed", "--image", image, "-o", out)
		want := "clipidx: embed: create " + out + ": no such file or directory\n"
		if code != 1 || errOut != want {
			t.Errorf("image %s: exit %d, stderr %q, want 1 and %q", image, code, errOut, want)
		}
	}
	// A folder in the output's place is named too.
	_, errOut, code := runCLI(t, "--model", model, "embed", "--text", "hi", "-o", dir)
	if code != 1 || !strings.Contains(errOut, "create "+dir+": it is a folder") {
		t.Errorf("output a folder: exit %d, stderr %q", code, errOut)
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != 0 {
		t.Errorf("files left in %s: %v (%v)", dir, left, err)
	}
}

// TestWriteFileNamesOutput: writeFile's errors name the output, never the
// temporary file beside it.
func TestWriteFileNamesOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "missing", "x.f32")
	err := writeFile(out, func(io.Writer) error { return nil })
	if err == nil || err.Error() != "create "+out+": no such file or directory" {
		t.Errorf("error %v, want create %s: no such file or directory", err, out)
	}
	if err := checkOutput(out); err == nil || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("checkOutput: %v", err)
	}
}
