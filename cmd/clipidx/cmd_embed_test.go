package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// runModelCmd runs the root command in-process and returns standard output,
// standard error and the error (an *exitError carries the exit code).
func runModelCmd(args ...string) (string, string, error) {
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// readRows reads little-endian float32 rows of width d.
func readRows(t *testing.T, path string, d int) [][]float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%(4*d) != 0 {
		t.Fatalf("%s: %d bytes is not a whole number of %d-float rows", path, len(b), d)
	}
	var rows [][]float32
	for off := 0; off < len(b); off += 4 * d {
		r := make([]float32, d)
		for i := range r {
			r[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*i:]))
		}
		rows = append(rows, r)
	}
	return rows
}

// TestEmbedMatchesReference embeds the fixture's PNGs and texts from their
// files and strings (so preprocessing, tokenizer and forward all run) and
// compares every row with reference.json.
func TestEmbedMatchesReference(t *testing.T) {
	model := fixtures.TinyModel(t)
	ref, err := conformance.ReadReference(model)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.f32")
	args := []string{"--model", model, "embed", "--exif=false", "-o", out}
	// Texts first on the command line: the f32 output still puts images first.
	for _, tx := range ref.Texts {
		args = append(args, "--text", tx.Text)
	}
	for _, im := range ref.Images {
		args = append(args, "--image", filepath.Join(model, im.File))
	}
	if _, stderr, err := runModelCmd(args...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	D := len(ref.Images[0].ImageEmbeds)
	rows := readRows(t, out, D)
	if len(rows) != len(ref.Images)+len(ref.Texts) {
		t.Fatalf("%d rows, want %d", len(rows), len(ref.Images)+len(ref.Texts))
	}
	for i, im := range ref.Images {
		checkEmbedding(t, "image "+im.Name, rows[i], im.ImageEmbeds, compare.F32CPU().Image)
	}
	for j, tx := range ref.Texts {
		checkEmbedding(t, "text "+tx.Name, rows[len(ref.Images)+j], tx.TextEmbeds, compare.F32CPU().Text)
	}
}

// checkEmbedding compares one embedding with its reference at gate g.
func checkEmbedding(t *testing.T, what string, got, want []float32, g compare.Gate) {
	t.Helper()
	s, err := compare.Embeddings(got, want, 1, len(want))
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	for _, v := range s.Check(g) {
		t.Errorf("%s: %s", what, v)
	}
}

// TestEmbedJSON checks argument order, ids and the embeddings of --format json.
func TestEmbedJSON(t *testing.T) {
	model := fixtures.TinyModel(t)
	ref, err := conformance.ReadReference(model)
	if err != nil {
		t.Fatal(err)
	}
	img := func(i int) string { return filepath.Join(model, ref.Images[i].File) }
	// "random noise, static on a TV!" has a comma: it must stay one text.
	stdout, stderr, err := runModelCmd("--model", model, "embed", "--exif=false", "--format", "json",
		"--text", ref.Texts[4].Text, "--image", img(2), "--text", ref.Texts[0].Text, "--image", img(0))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc struct {
		Model string `json:"model"`
		Dim   int    `json:"dim"`
		Items []struct {
			Kind      string    `json:"kind"`
			Input     string    `json:"input"`
			IDs       []int32   `json:"ids"`
			Embedding []float32 `json:"embedding"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if doc.Model != "tiny-clip-h" || doc.Dim != 32 || len(doc.Items) != 4 {
		t.Fatalf("model %q dim %d, %d items", doc.Model, doc.Dim, len(doc.Items))
	}
	want := []struct {
		kind, input string
		ids         []int32
		emb         []float32
	}{
		{"text", ref.Texts[4].Text, ref.Texts[4].IDs, ref.Texts[4].TextEmbeds},
		{"image", img(2), nil, ref.Images[2].ImageEmbeds},
		{"text", ref.Texts[0].Text, ref.Texts[0].IDs, ref.Texts[0].TextEmbeds},
		{"image", img(0), nil, ref.Images[0].ImageEmbeds},
	}
	for i, w := range want {
		it := doc.Items[i]
		if it.Kind != w.kind || it.Input != w.input || !slices.Equal(it.IDs, w.ids) || len(it.Embedding) != doc.Dim {
			t.Errorf("item %d: %s %q ids %v (%d values), want %s %q ids %v", i, it.Kind, it.Input, it.IDs, len(it.Embedding), w.kind, w.input, w.ids)
			continue
		}
		checkEmbedding(t, fmt.Sprintf("item %d", i), it.Embedding, w.emb, compare.F32CPU().Image)
	}
}

func TestEmbedErrors(t *testing.T) {
	model := fixtures.TinyModel(t)
	empty := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"nothing to embed", []string{"--model", model, "embed", "-o", "x.f32"}, 2, "nothing to embed"},
		{"no output", []string{"--model", model, "embed", "--text", "a"}, 2, "-o OUT.f32 is required"},
		{"bad format", []string{"--model", model, "embed", "--text", "a", "--format", "csv"}, 2, "want f32 or json"},
		{"positional argument", []string{"--model", model, "embed", "cat.jpg", "-o", "-"}, 2, "unknown command"},
		{"missing image", []string{"--model", model, "embed", "--image", "/nonexistent/cat.jpg", "-o", "-"}, 1, "/nonexistent/cat.jpg"},
		{"empty model folder", []string{"--model", empty, "embed", "--text", "a", "-o", "-"}, 1, "clipidx model pull"},
		{"npu without one", []string{"--model", model, "--device", "npu", "embed", "--text", "a", "-o", "-"}, 1, "NPU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runModelCmd(c.args...)
			if got := exitCode(err); got != c.code {
				t.Errorf("exit code %d (%v), want %d", got, err, c.code)
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v, want one mentioning %q", err, c.msg)
			}
		})
	}
}
