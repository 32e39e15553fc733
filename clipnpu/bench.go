package clipnpu

// Timing the towers on random inputs, for clipidx bench model.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/rss"
	"github.com/clipidx/clipidx/tokenizer"
)

// BenchResult is what Bench measured (clipidx bench model --json prints it).
type BenchResult struct {
	Model        string    `json:"model"`
	Dtype        string    `json:"dtype,omitempty"`
	Weights      string    `json:"weights,omitempty"` // how the CPU holds the matrices (clipnpu.Info.Weights)
	Device       string    `json:"device"`
	Precision    string    `json:"precision,omitempty"` // arithmetic of the products (Info.Precision)
	Kernel       string    `json:"kernel,omitempty"`    // the GEMM kernel the products ran on
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
	// The untimed warm-up passes (benchWarmups of them): the first faults
	// in the weights, the CPU packs its float32 weights in the second
	// (Options.PackEarly).
	ImageWarmupS []float64 `json:"image_warmup_s,omitempty"`
	TextWarmupS  []float64 `json:"text_warmup_s,omitempty"`
	// Median process CPU seconds (all threads, user+system) of the timed
	// passes: on a shared machine their ratio to another runtime's is
	// steadier than the wall times'. 0 where the system cannot tell.
	ImageCPUS   float64 `json:"image_cpu_s"`
	TextCPUS    float64 `json:"text_cpu_s"`
	ImagesPerS  float64 `json:"images_per_s"`
	PromptsPerS float64 `json:"prompts_per_s"`
	ImageGFLOP  float64 `json:"image_gflop"`  // per image
	TextGFLOP   float64 `json:"text_gflop"`   // per prompt
	ImageGFLOPS float64 `json:"image_gflops"` // achieved in the image pass
	TextGFLOPS  float64 `json:"text_gflops"`
	GFLOPS      float64 `json:"gflops"` // both passes together
	// F32PeakGFLOPS is the CPU's float32 FMA peak on Threads threads
	// (gemm.PeakF32, measured after the passes; 0 when not measured:
	// not the CPU, or no FMA loop for this CPU): a float32 pass's
	// GFLOP/s over it is the share of the machine it uses.
	F32PeakGFLOPS float64 `json:"f32_peak_gflops,omitempty"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
}

// BenchOptions says what Bench measures; Runs ≥ 1.
type BenchOptions struct {
	Images, Texts int    // pass sizes; 0 skips that tower
	PromptTokens  int    // tokens per prompt, EOS included; 0 = the context
	Runs          int    // timed passes after the warm-ups (benchWarmups)
	Seed          uint64 // of the random inputs
	Threads       int    // reported; 0 = runtime.NumCPU()
}

// Bench times the passes of b, a model of shape cfg, on random inputs:
// benchWarmups warm-ups, then o.Runs timed passes of each tower asked for.
func Bench(b Backend, cfg Config, o BenchOptions) (*BenchResult, error) {
	if o.Runs < 1 || o.Images < 0 || o.Texts < 0 || o.Images+o.Texts == 0 {
		return nil, fmt.Errorf("bench: %d runs of %d images and %d texts: want at least 1 run and non-negative counts, not both 0", o.Runs, o.Images, o.Texts)
	}
	info := b.Info()
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	tokens := o.PromptTokens
	if tokens == 0 {
		tokens = cfg.Text.Context
	}
	if tokens > cfg.Text.Context {
		return nil, fmt.Errorf("prompt tokens %d: the model's context is %d tokens", tokens, cfg.Text.Context)
	}
	res := &BenchResult{Device: info.Device, Precision: info.Precision, Kernel: benchKernel(info), Threads: threads, Images: o.Images, Texts: o.Texts, PromptTokens: tokens, Runs: o.Runs,
		ImageGFLOP: cfg.ImageFLOPs() / 1e9, TextGFLOP: cfg.TextFLOPs(tokens) / 1e9}
	rng := rand.New(rand.NewPCG(o.Seed, 5))
	if o.Images > 0 {
		S := cfg.Vision.ImageSize
		px := make([]float32, o.Images*3*S*S)
		for i := range px {
			px[i] = float32(rng.NormFloat64())
		}
		warm, runs, cpu, err := timePasses(o.Runs, func() error { _, err := b.EncodeImages(px, o.Images); return err })
		if err != nil {
			return nil, fmt.Errorf("image pass: %w", err)
		}
		res.ImageWarmupS, res.ImageRunsS, res.ImagePassS, res.ImageCPUS = warm, runs, median(runs), median(cpu)
		res.ImagesPerS = float64(o.Images) / res.ImagePassS
		res.ImageGFLOPS = res.ImageGFLOP * float64(o.Images) / res.ImagePassS
	}
	if o.Texts > 0 {
		ids := benchPrompts(rng, o.Texts, tokens, cfg.Text)
		warm, runs, cpu, err := timePasses(o.Runs, func() error { _, err := b.EncodeTexts(ids, o.Texts); return err })
		if err != nil {
			return nil, fmt.Errorf("text pass: %w", err)
		}
		res.TextWarmupS, res.TextRunsS, res.TextPassS, res.TextCPUS = warm, runs, median(runs), median(cpu)
		res.PromptsPerS = float64(o.Texts) / res.TextPassS
		res.TextGFLOPS = res.TextGFLOP * float64(o.Texts) / res.TextPassS
	}
	work := res.ImageGFLOP*float64(o.Images) + res.TextGFLOP*float64(o.Texts)
	res.GFLOPS = work / (res.ImagePassS + res.TextPassS)
	if info.Device == "cpu" {
		res.F32PeakGFLOPS = gemm.PeakF32(threads, 300*time.Millisecond)
	}
	return res, nil
}

// benchPrompts makes n token sequences [n, T] of tokens ≤ T tokens each:
// BOS, random word ids, EOS at position tokens-1, then EOS padding.
func benchPrompts(rng *rand.Rand, n, tokens int, c TextConfig) []int32 {
	T := c.Context
	ids := make([]int32, n*T)
	words := max(c.Vocab-2, 1)
	end := min(tokens, T) - 1 // EOS position
	for b := 0; b < n; b++ {
		seq := ids[b*T : (b+1)*T]
		for j := range seq {
			switch {
			case j == 0:
				seq[j] = int32(min(tokenizer.BOS, c.Vocab-1))
			case j < end:
				seq[j] = int32(rng.IntN(words))
			default:
				seq[j] = c.EOS
			}
		}
	}
	return ids
}

// benchWarmups is how many passes of each tower run before the timed ones:
// the first faults the weights in; with Options.PackEarly the CPU path
// packs its float32 weights in the second where that pays (AVX-512, AVX2; once,
// 1.5-3.6 s for ViT-H/14's image tower on Emerald Rapids), as a long build
// does after its first few passes, so the timed passes are a long build's
// steady state.
const benchWarmups = 2

// timePasses runs pass benchWarmups times to warm up, then runs times, and
// returns the wall seconds of the warm-ups and the wall and the process CPU
// seconds of each timed pass (CPU all 0 where the system cannot tell).
func timePasses(runs int, pass func() error) (warm, wall, cpu []float64, err error) {
	warm = make([]float64, benchWarmups)
	for i := range warm {
		t := time.Now()
		if err := pass(); err != nil {
			return nil, nil, nil, err
		}
		warm[i] = time.Since(t).Seconds()
	}
	wall, cpu = make([]float64, runs), make([]float64, runs)
	for i := range wall {
		c0, cerr := rss.CPUTime()
		t := time.Now()
		if err := pass(); err != nil {
			return nil, nil, nil, err
		}
		wall[i] = time.Since(t).Seconds()
		if c1, err := rss.CPUTime(); err == nil && cerr == nil {
			cpu[i] = (c1 - c0).Seconds()
		}
	}
	return warm, wall, cpu, nil
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

// benchKernel names the GEMM kernel behind a CPU backend's products.
func benchKernel(info Info) string {
	switch {
	case info.Precision == "bf16":
		k, _ := gemm.BF16Kernel()
		return k
	case info.Device == DeviceCPU:
		return gemm.Kernel()
	}
	return ""
}
