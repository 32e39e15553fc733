package main

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// classifyLine is one parsed output line.
type classifyLine struct {
	name   string
	labels []string
	probs  []float64
}

// parseClassify parses "name: label p, label p, ..." lines (labels without
// ", " inside).
func parseClassify(t *testing.T, out string) []classifyLine {
	t.Helper()
	var lines []classifyLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		name, rest, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("line %q has no name", l)
		}
		cl := classifyLine{name: name}
		for _, part := range strings.Split(rest, ", ") {
			i := strings.LastIndexByte(part, ' ')
			p, err := strconv.ParseFloat(part[i+1:], 64)
			if i < 0 || err != nil || len(part[i+1:]) != 5 {
				t.Fatalf("line %q: bad entry %q", l, part)
			}
			cl.labels = append(cl.labels, part[:i])
			cl.probs = append(cl.probs, p)
		}
		lines = append(lines, cl)
	}
	return lines
}

// TestClassify compares the printed probabilities with the softmax of the
// reference logits: the default template turns labels cat and dog into the
// fixture's prompts "a photo of a cat" and "a photo of a dog".
func TestClassify(t *testing.T) {
	model := fixtures.TinyModel(t)
	ref, err := conformance.ReadReference(model)
	if err != nil {
		t.Fatal(err)
	}
	// --precision f32: the gate is float32's (auto may be bf16).
	args := []string{"--model", model, "--precision", "f32", "classify", "--exif=false", "--label", "cat", "--label", "dog"}
	for _, im := range ref.Images {
		args = append(args, filepath.Join(model, im.File))
	}
	stdout, stderr, err := runModelCmd(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := parseClassify(t, stdout)
	if len(lines) != len(ref.Images) {
		t.Fatalf("%d lines for %d images:\n%s", len(lines), len(ref.Images), stdout)
	}
	for i, im := range ref.Images {
		l := lines[i]
		if l.name != filepath.Join(model, im.File) {
			t.Errorf("line %d names %q, want %q", i, l.name, filepath.Join(model, im.File))
		}
		lc, ld := ref.LogitsPerImage[im.Name]["cat"], ref.LogitsPerImage[im.Name]["dog"]
		pCat := 1 / (1 + math.Exp(ld-lc))
		want := map[string]float64{"cat": pCat, "dog": 1 - pCat}
		for k, lab := range l.labels {
			if math.Abs(l.probs[k]-want[lab]) > 0.0006 {
				t.Errorf("%s: p(%s) = %.3f, reference %.4f", im.Name, lab, l.probs[k], want[lab])
			}
		}
		if l.probs[0] < l.probs[1] || (want[l.labels[0]] < want[l.labels[1]]-0.001) {
			t.Errorf("%s: %v not in falling order of %v", im.Name, l.labels, want)
		}
	}
}

// TestClassifyTemplateAndTop1 uses whole prompts as labels ("{}" template),
// one with a comma, and checks the top-1 against the reference logits.
func TestClassifyTemplateAndTop1(t *testing.T) {
	model := fixtures.TinyModel(t)
	ref, err := conformance.ReadReference(model)
	if err != nil {
		t.Fatal(err)
	}
	picked := []int{2, 3, 4, 9} // gradient, checker, noise (has a comma), emoji
	args := []string{"--model", model, "classify", "--exif=false", "--template", "{}"}
	for _, j := range picked {
		args = append(args, "--label", ref.Texts[j].Text)
	}
	for _, im := range ref.Images {
		args = append(args, filepath.Join(model, im.File))
	}
	stdout, stderr, err := runModelCmd(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != len(ref.Images) {
		t.Fatalf("%d lines:\n%s", len(lines), stdout)
	}
	for i, im := range ref.Images {
		best := picked[0]
		for _, j := range picked {
			if ref.LogitsPerImage[im.Name][ref.Texts[j].Name] > ref.LogitsPerImage[im.Name][ref.Texts[best].Name] {
				best = j
			}
		}
		prefix := filepath.Join(model, im.File) + ": " + ref.Texts[best].Text + " "
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %q, want top-1 %q", lines[i], ref.Texts[best].Text)
		}
	}
}

func TestClassifyErrors(t *testing.T) {
	model := fixtures.TinyModel(t)
	good := filepath.Join(model, "images", "gradient_256.png")

	// A missing image is reported; the others are still classified.
	stdout, _, err := runModelCmd("--model", model, "classify", "--label", "cat", "--label", "dog", "/nonexistent.png", good)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "1 of 2") {
		t.Errorf("missing image: %v", err)
	}
	if !strings.HasPrefix(stdout, good+": ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("missing image: output %q", stdout)
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no label", []string{"classify", good}, 2, "--label"},
		{"template without {}", []string{"classify", good, "--label", "a", "--template", "a photo"}, 2, "no {}"},
		{"no image", []string{"classify", "--label", "a"}, 2, "requires at least 1 arg"},
		// Once classified as "b 1.000,  0.000" and "a 0.5, a 0.5".
		{"empty label", []string{"classify", good, "--label", " ", "--label", "b"}, 2, "empty"},
		{"label twice", []string{"classify", good, "--label", "a", "--label", "b", "--label", "a"}, 2, "given twice"},
		{"label twice, another case", []string{"classify", good, "--label", "Cat", "--label", "dog", "--label", "cat "}, 2, `--label "Cat" and --label "cat " are the same to the model`},
	} {
		_, _, err := runModelCmd(append([]string{"--model", model}, c.args...)...)
		if exitCode(err) != c.code || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: exit %d, %v; want %d mentioning %q", c.name, exitCode(err), err, c.code, c.msg)
		}
	}
}

func TestFormatClassification(t *testing.T) {
	for _, c := range []struct {
		labels []string
		p      []float64
		want   string
	}{
		{[]string{"dog", "cat", "car"}, []float64{0.0001, 0.9998, 0.0001}, "cats.jpg: cat 1.000, dog 0.000, car 0.000"},
		{[]string{"a", "b"}, []float64{0.25, 0.75}, "cats.jpg: b 0.750, a 0.250"},
	} {
		if got := formatClassification("cats.jpg", c.labels, c.p); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	p := clipnpu.Softmax([]float32{1000, 1000, -1000})
	if math.Abs(p[0]-0.5) > 1e-12 || p[2] != 0 {
		t.Errorf("softmax of large logits = %v", p)
	}
}
