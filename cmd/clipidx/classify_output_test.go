package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// nanModel is a copy of the tiny model whose named weights are all NaN
// (its JSON and text files copied, model.safetensors rewritten).
func nanModel(t *testing.T, tensors ...string) string {
	t.Helper()
	src := fixtures.TinyModel(t)
	dst := t.TempDir()
	for _, pat := range []string{"*.json", "*.txt"} {
		files, err := filepath.Glob(filepath.Join(src, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	for _, name := range tensors {
		var e struct {
			Dtype   string   `json:"dtype"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(header[name], &e); err != nil || e.Dtype != "F32" {
			t.Fatalf("tensor %s: %s (%v)", name, header[name], err)
		}
		for off := 8 + int64(n) + e.Offsets[0]; off < 8+int64(n)+e.Offsets[1]; off += 4 {
			binary.LittleEndian.PutUint32(data[off:], math.Float32bits(float32(math.NaN())))
		}
	}
	if err := os.WriteFile(filepath.Join(dst, "model.safetensors"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestClassifyInvalidEmbedding: a model that gives NaN embeddings never
// prints NaN probabilities: the command fails, naming the model folder and
// the label (NaN prompts) or the image (NaN image embeddings).
func TestClassifyInvalidEmbedding(t *testing.T) {
	img := filepath.Join(fixtures.TinyModel(t), "images", "gradient_256.png")
	for _, tc := range []struct {
		name    string
		tensors []string
		want    string
	}{
		{"both projections", []string{"visual_projection.weight", "text_projection.weight"}, `label "cat" (prompt "a photo of a cat")`},
		{"image projection", []string{"visual_projection.weight"}, "image " + img},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := nanModel(t, tc.tensors...)
			out, errOut, code := runCLI(t, "--model", model, "classify", img, "--label", "cat", "--label", "dog")
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q: want exit 1 and nothing printed", code, out)
			}
			if !strings.Contains(errOut, "the model in "+model+" returned an invalid embedding for "+tc.want) {
				t.Errorf("stderr %q does not name the model folder and %s", errOut, tc.want)
			}
		})
	}
}

// TestFormatClassificationShown: a name or label that holds a newline or
// an escape sequence cannot forge a result line or reach the terminal raw.
func TestFormatClassificationShown(t *testing.T) {
	got := formatClassification("x\nfake.png: cat 1.000\ny.png", []string{"cat", "d\x1b[2Jog\r"}, []float64{0.25, 0.75})
	want := `x\x0afake.png: cat 1.000\x0ay.png: d\x1b[2Jog\x0d 0.750, cat 0.250`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestClassifyShowsNames runs classify on a file whose name holds a
// newline: one result line, the newline shown as \x0a.
func TestClassifyShowsNames(t *testing.T) {
	model := fixtures.TinyModel(t)
	data, err := os.ReadFile(filepath.Join(model, "images", "gradient_256.png"))
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "x\nfake.png: cat 1.000\ny.png")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "--model", model, "classify", name, "--label", "cat", "--label", "dog\nz")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, strings.ReplaceAll(name, "\n", `\x0a`)+": ") || !strings.Contains(out, `dog\x0az `) {
		t.Errorf("output %q: want one line, the name and label shown with \\x0a", out)
	}
}
