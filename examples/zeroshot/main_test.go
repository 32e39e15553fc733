package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestReferenceTop1 classifies the fixture images against the fixture texts
// (used verbatim, template "{}") and expects the top-1 label that the
// independent PyTorch reference computed for each image.
func TestReferenceTop1(t *testing.T) {
	dir := fixtures.TinyModel(t)
	var ref struct {
		Texts []struct {
			Name, Text string
		}
		Images []struct {
			Name, File string
		}
		ZeroShotTop1 map[string]string `json:"zero_shot_top1"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	args := []string{"-model", dir, "-template", "{}", "-top", "3", "-batch", "3", filepath.Join(dir, "images")}
	nameOf := map[string]string{}
	for _, tx := range ref.Texts {
		args = append(args, tx.Text)
		nameOf[tx.Text] = tx.Name
	}
	var out, errb bytes.Buffer
	if err := run(args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(ref.Images) {
		t.Fatalf("%d lines for %d images:\n%s", len(lines), len(ref.Images), out.String())
	}
	got := map[string]string{}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 7 {
			t.Fatalf("line %q: want a path and 3 label/probability pairs", l)
		}
		var prev float64 = 2
		for i := 2; i < len(f); i += 2 {
			p, err := strconv.ParseFloat(f[i], 64)
			if err != nil || p > prev || p < 0 || p > 1 || math.IsNaN(p) {
				t.Errorf("line %q: probabilities must be in [0,1], descending", l)
			}
			prev = p
		}
		got[filepath.Base(f[0])] = nameOf[f[1]]
	}
	for _, im := range ref.Images {
		if want := ref.ZeroShotTop1[im.Name]; got[filepath.Base(im.File)] != want {
			t.Errorf("%s: top-1 %q, reference %q", im.File, got[filepath.Base(im.File)], want)
		}
	}
}

func TestSoftmaxAndBest(t *testing.T) {
	p := clipnpu.Softmax([]float32{1, 3, 2, 1000})
	var sum float64
	for _, v := range p {
		sum += v
	}
	if math.Abs(float64(sum-1)) > 1e-6 || p[3] < 0.999 {
		t.Errorf("softmax = %v", p)
	}
	if b := best([]float64{0.1, 0.5, 0.2, 0.5}, 3); b[0] != 1 || b[1] != 3 || b[2] != 2 {
		t.Errorf("best = %v, want [1 3 2]", b)
	}
}
