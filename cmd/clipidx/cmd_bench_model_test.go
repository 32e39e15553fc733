package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/gemm"
)

func TestBenchModelValidate(t *testing.T) {
	ok := benchModelOptions{random: "h14", dtype: "f32", images: 4, texts: 8, runs: 3}
	tests := []struct {
		name     string
		edit     func(o *benchModelOptions)
		dtypeSet bool
		wantErr  string
	}{
		{"defaults", func(o *benchModelOptions) {}, false, ""},
		{"b32 bf16", func(o *benchModelOptions) { o.random, o.dtype = "b32", "bf16" }, true, ""},
		{"images only", func(o *benchModelOptions) { o.texts = 0 }, false, ""},
		{"model folder", func(o *benchModelOptions) { o.random = "" }, false, ""},
		{"bad shape", func(o *benchModelOptions) { o.random = "l14" }, false, "--random"},
		{"bad dtype", func(o *benchModelOptions) { o.dtype = "f64" }, true, "--dtype"},
		{"dtype without random", func(o *benchModelOptions) { o.random = "" }, true, "--random models only"},
		{"negative images", func(o *benchModelOptions) { o.images = -1 }, false, "--images"},
		{"nothing to do", func(o *benchModelOptions) { o.images, o.texts = 0, 0 }, false, "not both 0"},
		{"no runs", func(o *benchModelOptions) { o.runs = 0 }, false, "--runs"},
		{"short prompts", func(o *benchModelOptions) { o.tokens = 7 }, false, ""},
		{"one-token prompts", func(o *benchModelOptions) { o.tokens = 1 }, false, "--prompt-tokens"},
	}
	for _, tc := range tests {
		o := ok
		tc.edit(&o)
		err := o.validate(tc.dtypeSet)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestBenchModelCommand runs `clipidx bench model` on a random ViT-B/32
// (16-bit, one image and one prompt) and checks the JSON it prints.
func TestBenchModelCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 150M-parameter random model")
	}
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "model", "--random", "b32", "--dtype", "f16", "--images", "1", "--texts", "2", "--runs", "1", "--json", "--threads", "2", "--precision", "f32"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	keys := []string{"image_pass_s", "text_pass_s", "images_per_s", "prompts_per_s", "gflops", "peak_rss_bytes"}
	if runtime.GOOS == "linux" {
		keys = append(keys, "image_cpu_s", "text_cpu_s")
	}
	if gemm.PeakF32(1, time.Millisecond) > 0 {
		// The CPU's float32 FMA peak beside the passes (gemm.PeakF32).
		keys = append(keys, "f32_peak_gflops")
	}
	for _, k := range keys {
		v, ok := r[k].(float64)
		if !ok || !(v > 0) {
			t.Errorf("%s = %v, want a positive number", k, r[k])
		}
	}
	// Two untimed warm-ups of each tower (the second packs f32 weights:
	// --precision f32 above, as auto may be bf16).
	for _, k := range []string{"image_warmup_s", "text_warmup_s"} {
		if w, ok := r[k].([]any); !ok || len(w) != 2 || !(w[0].(float64) > 0) || !(w[1].(float64) > 0) {
			t.Errorf("%s = %v, want two positive warm-up times", k, r[k])
		}
	}
	// The counts agree with each other.
	if got, want := r["images_per_s"].(float64), 1/r["image_pass_s"].(float64); math.Abs(got-want) > 1e-9*want {
		t.Errorf("images_per_s %g, want 1/image_pass_s = %g", got, want)
	}
	if got, want := r["prompts_per_s"].(float64), 2/r["text_pass_s"].(float64); math.Abs(got-want) > 1e-9*want {
		t.Errorf("prompts_per_s %g, want 2/text_pass_s = %g", got, want)
	}
	if r["model"] != "random b32" || r["dtype"] != "f16" {
		t.Errorf("model %v dtype %v, want random b32 f16", r["model"], r["dtype"])
	}

	root = newRoot()
	out.Reset()
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "model", "--random", "x"})
	err := root.Execute()
	if ee, ok := err.(*exitError); !ok || ee.code != 2 {
		t.Errorf("--random x: error %v, want exit code 2", err)
	}
}

// TestBenchModelFolder measures the tiny fixture model through --model and
// checks the human-readable report and the FLOP count of its shape.
func TestBenchModelFolder(t *testing.T) {
	dir := fixtures.TinyModel(t)
	cfg, err := clipnpu.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"--images", "2", "--texts", "3"}, []string{"images   pass of 2", "texts    pass of 3 (77 tokens)", "GFLOP/s", "peak RSS"}, nil},
		{[]string{"--images", "0", "--texts", "2", "--prompt-tokens", "9"}, []string{"texts    pass of 2 (9 tokens)"}, nil},
		{[]string{"--images", "1", "--texts", "0"}, []string{"images   pass of 1"}, []string{"texts"}},
		{[]string{"--images", "0", "--texts", "1", "--device", "reference"}, []string{"on cpu-reference", "texts    pass of 1"}, []string{"images   pass", "FMA peak"}},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"bench", "model", "--model", dir, "--runs", "2"}, tc.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out.String(), w) {
				t.Errorf("%v: output has %q:\n%s", tc.args, w, out.String())
			}
		}
	}
	// The tiny shape's count: 2 layers of 257 tokens at width 80, MLP 320
	// (linears 2·T·(4·H² + 2·H·M), two attention products of 2·T²·H each),
	// the patch GEMM [256, 588]·[588, 80] and the projection.
	T := float64(cfg.Vision.Tokens())
	want := 2*(2*T*(4*80*80+2*80*320)+2*2*T*T*80) + 2*256*588*80 + 2*80*float64(cfg.ProjectionDim)
	if got := cfg.ImageFLOPs(); math.Abs(got-want) > 1e-6*want {
		t.Errorf("tiny image FLOPs %g, want %g", got, want)
	}

	root := newRoot()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"bench", "model", "--model", filepath.Join(t.TempDir(), "absent")})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--random h14") {
		t.Errorf("absent model folder: error %v, want a hint at --random h14", err)
	}
}
