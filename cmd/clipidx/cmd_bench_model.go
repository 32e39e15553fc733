package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/rss"
	"github.com/spf13/cobra"
)

func init() { benchCommands = append(benchCommands, newBenchModelCmd) }

// benchModelOptions are the flags of `clipidx bench model`.
type benchModelOptions struct {
	random string // "" (load --model), "h14" or "b32"
	dtype  string // weights of a random model: f32, f16, bf16
	seed   uint64
	images int // images per pass
	texts  int // prompts per pass
	tokens int // tokens per prompt incl. BOS and EOS; 0 = the full context
	runs   int // timed passes after the warm-up
	json   bool
}

// benchModelResult is what `bench model --json` prints.
type benchModelResult struct {
	Model        string    `json:"model"`
	Dtype        string    `json:"dtype,omitempty"`
	Weights      string    `json:"weights,omitempty"` // how the CPU holds the matrices (clipnpu.Info.Weights)
	Device       string    `json:"device"`
	Threads      int       `json:"threads"`
	Images       int       `json:"images"`
	Texts        int       `json:"texts"`
	PromptTokens int       `json:"prompt_tokens"`
	Runs         int       `json:"runs"`
	LoadS        float64   `json:"load_s"`
	ImagePassS   float64   `json:"image_pass_s"`
	TextPassS    float64   `json:"text_pass_s"`
	ImageRunsS   []float64 `json:"image_runs_s"`
	TextRunsS    []float64 `json:"text_runs_s"`
	// Median process CPU seconds (all threads, user+system) of the timed
	// passes: on a shared machine their ratio to another runtime's is
	// steadier than the wall times'. 0 where the system cannot tell.
	ImageCPUS    float64 `json:"image_cpu_s"`
	TextCPUS     float64 `json:"text_cpu_s"`
	ImagesPerS   float64 `json:"images_per_s"`
	PromptsPerS  float64 `json:"prompts_per_s"`
	ImageGFLOP   float64 `json:"image_gflop"`  // per image
	TextGFLOP    float64 `json:"text_gflop"`   // per prompt
	ImageGFLOPS  float64 `json:"image_gflops"` // achieved in the image pass
	TextGFLOPS   float64 `json:"text_gflops"`
	GFLOPS       float64 `json:"gflops"` // both passes together
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

func newBenchModelCmd() *cobra.Command {
	var o benchModelOptions
	c := &cobra.Command{
		Use:   "model",
		Short: "Time image and text passes of the model on this machine",
		Long: `Times an image pass and a text pass (the median of --runs passes after one
warm-up) and prints the time, images/s, prompts/s, the achieved GFLOP/s
(counted from the model's shape) and the process's peak resident memory.

--random h14 builds random weights of the exact ViT-H/14 shape in memory, so
any machine can be measured without a download; --random b32 the ViT-B/32
shape; --dtype f16 holds them as a 16-bit checkpoint would be. Without
--random the model folder (--model) is loaded, as stored or with --weights
f16; ` + "`clipidx model random h14 DIR`" + ` writes a stand-in folder of the size of
laion's float32 checkpoint.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd.Flags().Changed("dtype")); err != nil {
				return &exitError{code: 2, err: err}
			}
			return runBenchModel(cmd.OutOrStdout(), o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.random, "random", "", "random weights of this shape instead of --model: h14 or b32")
	f.StringVar(&o.dtype, "dtype", "f32", "weight storage of a --random model: f32, f16 or bf16")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the --random weights")
	f.IntVar(&o.images, "images", 4, "images per pass (0 skips the image pass)")
	f.IntVar(&o.texts, "texts", 8, "prompts per pass (0 skips the text pass)")
	f.IntVar(&o.tokens, "prompt-tokens", 0, "tokens per prompt with BOS and EOS (0 = the full context, 77); the CPU path skips the padding after EOS")
	f.IntVar(&o.runs, "runs", 3, "timed passes after the warm-up (the median is reported)")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return c
}

func (o *benchModelOptions) validate(dtypeSet bool) error {
	switch o.random {
	case "", "h14", "b32":
	default:
		return fmt.Errorf("--random %q: want h14 or b32", o.random)
	}
	switch o.dtype {
	case "f32", "f16", "bf16":
	default:
		return fmt.Errorf("--dtype %q: want f32, f16 or bf16", o.dtype)
	}
	if dtypeSet && o.random == "" {
		return errors.New("--dtype applies to --random models only (a model folder keeps its stored dtype unless --weights f16)")
	}
	if o.random != "" && g.weights != "" && g.weights != "stored" {
		return errors.New("--weights applies to model folders; a --random model is built in --dtype directly")
	}
	if o.images < 0 || o.texts < 0 || o.images+o.texts == 0 {
		return fmt.Errorf("--images %d --texts %d: want non-negative counts, not both 0", o.images, o.texts)
	}
	if o.tokens != 0 && o.tokens < 2 {
		return fmt.Errorf("--prompt-tokens %d: want 0 (the full context) or at least 2 (BOS and EOS)", o.tokens)
	}
	if o.runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", o.runs)
	}
	return nil
}

// benchOpen builds the backend to measure and returns its shape.
func benchOpen(o benchModelOptions) (clipnpu.Backend, clipnpu.Config, error) {
	towers := clipnpu.BothTowers
	switch {
	case o.images == 0:
		towers = clipnpu.TextTower
	case o.texts == 0:
		towers = clipnpu.ImageTower
	}
	if o.random != "" {
		cfg := clipnpu.ViTH14Config()
		if o.random == "b32" {
			cfg = clipnpu.ViTB32Config()
		}
		b, err := clipnpu.NewRandom(cfg, o.seed, o.dtype, clipnpu.Options{Device: g.device, Threads: g.threads, Towers: towers})
		return b, cfg, err
	}
	b, err := openModel(towers)
	if err != nil {
		return nil, clipnpu.Config{}, fmt.Errorf("%w (or measure this machine without a model: --random h14)", err)
	}
	// The shape for the FLOP count; a taconite bundle has no config.json,
	// then the counts stay 0 and the inputs follow Info.
	cfg, err := clipnpu.LoadConfig(g.model)
	if err != nil {
		info := b.Info()
		cfg = clipnpu.Config{Name: info.Name, ProjectionDim: info.Dim}
		cfg.Vision.ImageSize = info.ImageSize
		cfg.Text = clipnpu.TextConfig{Context: info.Context, Vocab: 49408, EOS: 49407}
	}
	return b, cfg, nil
}

func runBenchModel(w io.Writer, o benchModelOptions) error {
	t0 := time.Now()
	b, cfg, err := benchOpen(o)
	if err != nil {
		return err
	}
	defer b.Close()
	load := time.Since(t0).Seconds()
	res, err := benchBackend(b, cfg, o)
	if err != nil {
		return err
	}
	res.LoadS = load
	res.Model = cfg.Name
	res.Weights = b.Info().Weights
	if o.random != "" {
		res.Model = "random " + o.random
		res.Dtype = o.dtype
	}
	if res.PeakRSSBytes, err = rss.Peak(); err != nil {
		res.PeakRSSBytes = -1 // unknown on this system
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printBenchModel(w, res)
	return nil
}

// benchBackend times the passes of b, a model of shape cfg.
func benchBackend(b clipnpu.Backend, cfg clipnpu.Config, o benchModelOptions) (*benchModelResult, error) {
	info := b.Info()
	threads := g.threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	tokens := o.tokens
	if tokens == 0 {
		tokens = cfg.Text.Context
	}
	if tokens > cfg.Text.Context {
		return nil, fmt.Errorf("--prompt-tokens %d: the model's context is %d tokens", tokens, cfg.Text.Context)
	}
	res := &benchModelResult{Device: info.Device, Threads: threads, Images: o.images, Texts: o.texts, PromptTokens: tokens, Runs: o.runs,
		ImageGFLOP: imageFLOPs(cfg) / 1e9, TextGFLOP: textFLOPs(cfg, tokens) / 1e9}
	rng := rand.New(rand.NewPCG(o.seed, 5))
	if o.images > 0 {
		S := cfg.Vision.ImageSize
		px := make([]float32, o.images*3*S*S)
		for i := range px {
			px[i] = float32(rng.NormFloat64())
		}
		runs, cpu, err := timePasses(o.runs, func() error { _, err := b.EncodeImages(px, o.images); return err })
		if err != nil {
			return nil, fmt.Errorf("image pass: %w", err)
		}
		res.ImageRunsS, res.ImagePassS, res.ImageCPUS = runs, median(runs), median(cpu)
		res.ImagesPerS = float64(o.images) / res.ImagePassS
		res.ImageGFLOPS = res.ImageGFLOP * float64(o.images) / res.ImagePassS
	}
	if o.texts > 0 {
		ids := benchPrompts(rng, o.texts, tokens, cfg.Text)
		runs, cpu, err := timePasses(o.runs, func() error { _, err := b.EncodeTexts(ids, o.texts); return err })
		if err != nil {
			return nil, fmt.Errorf("text pass: %w", err)
		}
		res.TextRunsS, res.TextPassS, res.TextCPUS = runs, median(runs), median(cpu)
		res.PromptsPerS = float64(o.texts) / res.TextPassS
		res.TextGFLOPS = res.TextGFLOP * float64(o.texts) / res.TextPassS
	}
	work := res.ImageGFLOP*float64(o.images) + res.TextGFLOP*float64(o.texts)
	res.GFLOPS = work / (res.ImagePassS + res.TextPassS)
	return res, nil
}

// benchPrompts makes n token sequences [n, T] of tokens ≤ T tokens each:
// BOS, random word ids, EOS at position tokens-1, then EOS padding.
func benchPrompts(rng *rand.Rand, n, tokens int, c clipnpu.TextConfig) []int32 {
	T := c.Context
	ids := make([]int32, n*T)
	words := max(c.Vocab-2, 1)
	end := min(tokens, T) - 1 // EOS position
	for b := 0; b < n; b++ {
		seq := ids[b*T : (b+1)*T]
		for j := range seq {
			switch {
			case j == 0:
				seq[j] = int32(min(49406, c.Vocab-1)) // BOS in CLIP's vocabulary
			case j < end:
				seq[j] = int32(rng.IntN(words))
			default:
				seq[j] = c.EOS
			}
		}
	}
	return ids
}

// timePasses runs pass once to warm up, then runs times, and returns the
// wall and the process CPU seconds of each timed pass (CPU all 0 where the
// system cannot tell).
func timePasses(runs int, pass func() error) (wall, cpu []float64, err error) {
	if err := pass(); err != nil {
		return nil, nil, err
	}
	wall, cpu = make([]float64, runs), make([]float64, runs)
	for i := range wall {
		c0, cerr := rss.CPUTime()
		t := time.Now()
		if err := pass(); err != nil {
			return nil, nil, err
		}
		wall[i] = time.Since(t).Seconds()
		if c1, err := rss.CPUTime(); err == nil && cerr == nil {
			cpu[i] = (c1 - c0).Seconds()
		}
	}
	return wall, cpu, nil
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// linearFLOPs is 2·m·k·n, one multiply and one add per weight and row.
func linearFLOPs(m, k, n int) float64 { return 2 * float64(m) * float64(k) * float64(n) }

// encoderFLOPs counts L pre-LN layers on T tokens of width H and MLP width
// M: q, k, v, o (4·H²), fc1 and fc2 (2·H·M) per token, plus the attention
// products q·kᵀ and p·v (2·T²·H each). LayerNorm, softmax, GELU and the
// adds are O(T·H) and left out.
func encoderFLOPs(L, T, H, M int) float64 {
	perLayer := linearFLOPs(T, H, 4*H) + linearFLOPs(T, H, 2*M) + 2*linearFLOPs(T, H, T)
	return float64(L) * perLayer
}

// imageFLOPs is one image through the vision tower: patch embedding, the
// encoder on G²+1 tokens and the projection of the class token.
func imageFLOPs(c clipnpu.Config) float64 {
	v := c.Vision
	if v.Patch == 0 {
		return 0 // shape unknown
	}
	G := v.Grid()
	return linearFLOPs(G*G, 3*v.Patch*v.Patch, v.Hidden) +
		encoderFLOPs(v.Layers, v.Tokens(), v.Hidden, v.MLP) +
		linearFLOPs(1, v.Hidden, c.ProjectionDim)
}

// textFLOPs is one prompt of tokens tokens through the text tower and its
// projection. HF (and PyTorch) always run the full context; the fast CPU
// path runs the tokens up to EOS only, which this count assumes.
func textFLOPs(c clipnpu.Config, tokens int) float64 {
	t := c.Text
	return encoderFLOPs(t.Layers, tokens, t.Hidden, t.MLP) + linearFLOPs(1, t.Hidden, c.ProjectionDim)
}

func printBenchModel(w io.Writer, r *benchModelResult) {
	name := r.Model
	switch {
	case r.Weights != "":
		name += ", weights " + r.Weights
	case r.Dtype != "":
		name += " (" + r.Dtype + ")"
	}
	fmt.Fprintf(w, "model    %s on %s, %d %s; loaded in %.1f s; median of %d %s after a warm-up\n", name, r.Device, r.Threads, plural(r.Threads, "thread", "threads"), r.LoadS, r.Runs, plural(r.Runs, "run", "runs"))
	if r.Images > 0 {
		fmt.Fprintf(w, "images   pass of %d: %.3f s  %.3f images/s", r.Images, r.ImagePassS, r.ImagesPerS)
		if r.ImageGFLOP > 0 {
			fmt.Fprintf(w, "  %.1f GFLOP/s (%.1f GFLOP an image)", r.ImageGFLOPS, r.ImageGFLOP)
		}
		fmt.Fprintln(w)
	}
	if r.Texts > 0 {
		fmt.Fprintf(w, "texts    pass of %d (%d tokens): %.3f s  %.2f prompts/s", r.Texts, r.PromptTokens, r.TextPassS, r.PromptsPerS)
		if r.TextGFLOP > 0 {
			fmt.Fprintf(w, "  %.1f GFLOP/s (%.1f GFLOP a prompt)", r.TextGFLOPS, r.TextGFLOP)
		}
		fmt.Fprintln(w)
	}
	if r.PeakRSSBytes >= 0 {
		fmt.Fprintf(w, "memory   peak RSS %.2f GB (%d bytes)\n", float64(r.PeakRSSBytes)/1e9, r.PeakRSSBytes)
	} else {
		fmt.Fprintln(w, "memory   peak RSS not available on this system")
	}
}
