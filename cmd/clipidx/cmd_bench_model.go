package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/gemm"
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
	runs   int // timed passes after the warm-ups
	json   bool
}

func newBenchModelCmd() *cobra.Command {
	var o benchModelOptions
	c := &cobra.Command{
		Use:   "model",
		Short: "Time image and text passes of the model on this machine",
		Long: `Times an image pass and a text pass (the median of --runs passes after two
warm-ups: the first faults the weights in; by the second the CPU has packed
its float32 weights for its kernel, once, where that pays) and prints the time, images/s, prompts/s, the achieved GFLOP/s
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
	f.IntVar(&o.runs, "runs", 3, "timed passes after two warm-ups (the median is reported)")
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
	// The timed passes are to be a long build's steady state, so the CPU
	// packs its float32 weights in the second warm-up, as a build does
	// once its passes have paid for it.
	opts := modelOptions(towers)
	opts.PackEarly = true
	if o.random != "" {
		cfg := clipnpu.ViTH14Config()
		if o.random == "b32" {
			cfg = clipnpu.ViTB32Config()
		}
		opts.Weights = "" // --dtype chooses how random weights are held
		b, err := clipnpu.NewRandom(cfg, o.seed, o.dtype, opts)
		return b, cfg, err
	}
	b, err := openModel(opts)
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
	res, err := clipnpu.Bench(b, cfg, clipnpu.BenchOptions{Images: o.images, Texts: o.texts, PromptTokens: o.tokens, Runs: o.runs, Seed: o.seed, Threads: g.threads})
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
	choice := kernels.choice
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*clipnpu.BenchResult
			PrecisionWhy string       `json:"precision_why,omitempty"` // how auto was resolved
			KernelChoice *gemm.Choice `json:"kernel_choice,omitempty"` // the chooser's figures
		}{res, precisionWhy, choice})
	}
	printBenchModel(w, res)
	printKernelChoice(w, choice)
	return nil
}

// printKernelChoice says which kernels the chooser picked for this CPU,
// on what figures, and how --precision auto was resolved.
func printKernelChoice(w io.Writer, c *gemm.Choice) {
	if precisionWhy != "" {
		fmt.Fprintf(w, "choice   precision %s (%s)\n", g.precision, precisionWhy)
	}
	if c == nil {
		if kernels.note != "" {
			fmt.Fprintf(w, "choice   kernels %s\n", kernels.note)
		}
		return
	}
	fmt.Fprintf(w, "choice   float32 %s\n", c.Summary(gemm.ContestF32))
	if b := c.Summary(gemm.ContestBF16); b != "" {
		fmt.Fprintf(w, "choice   bf16 %s\n", b)
	}
	where := "not kept"
	if c.Path != "" {
		where = "kept in " + c.Path
	}
	fmt.Fprintf(w, "choice   %s\n", where)
}

// warmups formats the warm-up passes' seconds for printBenchModel.
func warmups(s []float64) string {
	if len(s) == 0 {
		return ""
	}
	t := make([]string, len(s))
	for i, v := range s {
		t[i] = fmt.Sprintf("%.2f", v)
	}
	return "  (warm-ups " + strings.Join(t, ", ") + " s)"
}

func printBenchModel(w io.Writer, r *clipnpu.BenchResult) {
	name := r.Model
	switch {
	case r.Weights != "":
		name += ", weights " + r.Weights
	case r.Dtype != "":
		name += " (" + r.Dtype + ")"
	}
	warm := max(len(r.ImageWarmupS), len(r.TextWarmupS))
	fmt.Fprintf(w, "model    %s on %s, %d %s; loaded in %.1f s; median of %d %s after %d %s\n", name, r.Device, r.Threads, plural(r.Threads, "thread", "threads"), r.LoadS, r.Runs, plural(r.Runs, "run", "runs"), warm, plural(warm, "warm-up", "warm-ups"))
	if r.Kernel != "" {
		fmt.Fprintf(w, "kernel   %s, %s products\n", r.Kernel, r.Precision)
	}
	if r.Images > 0 {
		fmt.Fprintf(w, "images   pass of %d: %.3f s  %.3f images/s", r.Images, r.ImagePassS, r.ImagesPerS)
		if r.ImageGFLOP > 0 {
			fmt.Fprintf(w, "  %.1f GFLOP/s (%.1f GFLOP an image)", r.ImageGFLOPS, r.ImageGFLOP)
		}
		fmt.Fprintln(w, warmups(r.ImageWarmupS))
	}
	if r.Texts > 0 {
		fmt.Fprintf(w, "texts    pass of %d (%d tokens): %.3f s  %.2f prompts/s", r.Texts, r.PromptTokens, r.TextPassS, r.PromptsPerS)
		if r.TextGFLOP > 0 {
			fmt.Fprintf(w, "  %.1f GFLOP/s (%.1f GFLOP a prompt)", r.TextGFLOPS, r.TextGFLOP)
		}
		fmt.Fprintln(w, warmups(r.TextWarmupS))
	}
	if r.F32PeakGFLOPS > 0 {
		fmt.Fprintf(w, "peak     float32 FMA peak of this CPU on %d %s: %.0f GFLOP/s (a loop of register-only FMAs, after the passes)", r.Threads, plural(r.Threads, "thread", "threads"), r.F32PeakGFLOPS)
		if r.Precision == "f32" {
			var used []string
			if r.ImageGFLOPS > 0 {
				used = append(used, fmt.Sprintf("image pass %.2f", r.ImageGFLOPS/r.F32PeakGFLOPS))
			}
			if r.TextGFLOPS > 0 {
				used = append(used, fmt.Sprintf("text pass %.2f", r.TextGFLOPS/r.F32PeakGFLOPS))
			}
			fmt.Fprintf(w, "; used: %s", strings.Join(used, ", "))
		}
		fmt.Fprintln(w)
	}
	if r.PeakRSSBytes >= 0 {
		fmt.Fprintf(w, "memory   peak RSS %.2f GB (%d bytes)\n", float64(r.PeakRSSBytes)/1e9, r.PeakRSSBytes)
	} else {
		fmt.Fprintln(w, "memory   peak RSS not available on this system")
	}
}
