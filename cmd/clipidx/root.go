package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// globals holds the flags every subcommand shares.
type globals struct {
	model   string // --model, env CLIPIDX_MODEL
	device  string // --device auto|cpu|npu, env CLIPIDX_DEVICE
	threads int    // --threads, 0 = all cores
	weights string // --weights stored|f16, env CLIPIDX_WEIGHTS
	// precision is --precision auto|f32|bf16, env CLIPIDX_PRECISION;
	// modelOptions resolves auto when the model is opened.
	precision string
	db        string // --db, env CLIPIDX_DB
}

var g globals

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// subcommands registers constructors from the cmd_*.go files (one file per
// subcommand, each adding itself in an init function).
var subcommands []func() *cobra.Command

func newRoot() *cobra.Command {
	envErr = nil
	kernels, precisionWhy = &kernelRun{}, ""
	root := &cobra.Command{
		Use:           "clipidx",
		Short:         "Search a photo collection by meaning with CLIP ViT-H/14",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Checks of the global flags, before any subcommand opens anything.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if envErr != nil {
			return usageError("%v", envErr)
		}
		noteRelativeXDG(cmd)
		if g.threads < 0 {
			return usageError("%s takes a count ≥ 0 (0 = all cores), not %d", given(cmd, "threads", "CLIPIDX_THREADS"), g.threads)
		}
		switch g.device {
		case "auto", "cpu", "npu", "reference":
		default:
			return usageError("%s takes auto, cpu, npu or reference, not %q", given(cmd, "device", "CLIPIDX_DEVICE"), g.device)
		}
		switch g.weights {
		case "stored", "f16":
		default:
			return usageError("%s takes stored or f16, not %q", given(cmd, "weights", "CLIPIDX_WEIGHTS"), g.weights)
		}
		switch g.precision {
		case "auto", "f32", "bf16":
		default:
			return usageError("%s takes auto, f32 or bf16, not %q", given(cmd, "precision", "CLIPIDX_PRECISION"), g.precision)
		}
		// Kernel overrides, for measuring one kernel against another (and
		// for a CPU where the default choice is wrong): the float32 GEMM
		// (avx512, avx2, neon, go) and the bf16 one (amx, avx512bf16).
		if k := os.Getenv("CLIPIDX_GEMM_KERNEL"); k != "" {
			if err := gemm.SetKernel(k); err != nil {
				return usageError("CLIPIDX_GEMM_KERNEL: %v", err)
			}
		}
		if k := os.Getenv("CLIPIDX_BF16_KERNEL"); k != "" {
			if err := gemm.SetBF16Kernel(k); err != nil {
				return usageError("CLIPIDX_BF16_KERNEL: %v", err)
			}
		}
		if err := useFFmpegForHEVC(cmd); err != nil {
			return err
		}
		// The HEIC and AVIF decoders' machine code, compiled once (about
		// 0.5 s) and loaded by later runs.
		if d := cacheDir(); d != "" {
			preprocess.SetCodeCache(filepath.Join(d, "decoders"))
		}
		return nil
	}
	// Flag and argument mistakes are usage errors (exit 2), like the
	// commands' own checks.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	pf := root.PersistentFlags()
	pf.StringVar(&g.model, "model", envOr("CLIPIDX_MODEL", defaultModelDir()), "model folder (HF CLIP layout or taconite bundle) [env CLIPIDX_MODEL]")
	pf.StringVar(&g.device, "device", envOr("CLIPIDX_DEVICE", "auto"), "where the model runs: auto, cpu, npu, or reference (the plain pure-Go forward) [env CLIPIDX_DEVICE]")
	pf.IntVar(&g.threads, "threads", envInt("CLIPIDX_THREADS", 0), "CPU threads for the model (0 = all cores) [env CLIPIDX_THREADS]")
	pf.StringVar(&g.weights, "weights", envOr("CLIPIDX_WEIGHTS", "stored"), "how the CPU holds float32 weights: stored (memory-mapped, 4 bytes a weight) or f16 (rounded at load: half the memory, embeddings within cosine 0.99999) [env CLIPIDX_WEIGHTS]")
	pf.StringVar(&g.precision, "precision", envOr("CLIPIDX_PRECISION", "auto"), "arithmetic of the CPU's products: auto (bf16 where the CPU has AMX or AVX512_BF16 and bf16 was measured faster there, else f32; embed and check default to f32), f32 (float32 throughout: exact parity with the reference), or bf16 (weights and activations rounded to bfloat16, sums in float32: 1.9x f32's speed on Zen 5, embeddings within cosine 0.9998 of f32; an index accepts vectors of either) [env CLIPIDX_PRECISION]")
	pf.StringVar(&g.db, "db", store.DefaultPath(), "index database file [env CLIPIDX_DB]")
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	// The completion command cobra adds at Execute is added now, so that
	// it is checked like the others. Its scripts go to the writer root has
	// when they are written (cobra takes the one it has when it adds it).
	root.SetOut(laterOut{root})
	root.InitDefaultCompletionCmd()
	root.SetOut(nil)
	for _, c := range root.Commands() {
		requireSubcommand(c)
	}
	return root
}

// laterOut writes to c's output as it is set when written to.
type laterOut struct{ c *cobra.Command }

func (w laterOut) Write(p []byte) (int, error) { return w.c.OutOrStdout().Write(p) }

// requireSubcommand makes c, when it only groups other commands (model,
// bench, completion), and each such command below it, refuse a word that
// names none of them: a usage error (exit 2) naming the word and the
// commands it takes. Cobra would print c's help and exit 0, so that
// "clipidx model pul" looked like success. Alone, c prints its help, as
// clipidx alone does.
func requireSubcommand(c *cobra.Command) {
	for _, sub := range c.Commands() {
		requireSubcommand(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var names []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		msg := fmt.Sprintf("unknown command %q for %q: it takes %s", args[0], cmd.CommandPath(), strings.Join(names, ", "))
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return usageError("%s", msg)
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "clipidx:", err)
	return exitCode(err)
}

// exitCode is 0 for no error, the code an exitError carries, 2 for cobra's
// own usage errors (unknown command, wrong number of arguments), else 1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	msg := err.Error()
	for _, p := range []string{"unknown command ", "requires at least ", "accepts at most ", "accepts between ", "accepts ", "invalid argument "} {
		if strings.HasPrefix(msg, p) {
			return 2
		}
	}
	return 1
}

// useFFmpegForHEVC has HEICs decoded by ffmpeg where it is found (the
// command's --ffmpeg folder, else CLIPIDX_FFMPEG, else PATH), looked for
// at the first HEIC; CLIPIDX_HEVC=builtin keeps libde265 as WebAssembly.
// The pixels are the same either way (see preprocess.UseFFmpeg).
func useFFmpegForHEVC(cmd *cobra.Command) error {
	switch v := os.Getenv("CLIPIDX_HEVC"); v {
	case "builtin":
		preprocess.UseFFmpeg(nil)
		return nil
	case "", "ffmpeg":
	default:
		return usageError("CLIPIDX_HEVC takes ffmpeg (the default: ffmpeg when found) or builtin, not %q", v)
	}
	dir := os.Getenv("CLIPIDX_FFMPEG")
	if f := cmd.Flags().Lookup("ffmpeg"); f != nil {
		dir = f.Value.String()
	}
	preprocess.UseFFmpeg(func() string {
		t, err := video.Find(dir)
		if err != nil {
			return ""
		}
		return t.FFmpeg
	})
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// envErr records an environment variable that could not be parsed; the
// root command reports it before running anything.
var envErr error

func envInt(key string, def int) int {
	if v := os.Getenv(key); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			envErr = fmt.Errorf("%s=%q is not a whole number", key, v)
			return def
		}
		return n
	}
	return def
}

// modelsRoot holds one folder per pulled repository, <owner>/<name>.
func modelsRoot() string { return clipnpu.ModelsDir() }

// defaultModelDir is where `clipidx model pull` puts the default checkpoint.
func defaultModelDir() string { return clipnpu.DefaultDir() }

// given names where a global flag's value came from: --flag when given,
// else the environment variable env that set its default.
func given(cmd *cobra.Command, flag, env string) string {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return "--" + flag
	}
	if os.Getenv(env) != "" {
		return env
	}
	return "--" + flag
}

// noteRelativeXDG says, on stderr, when XDG_DATA_HOME or XDG_CACHE_HOME is
// set to a relative path, which clipidx ignores as the XDG specification
// says (userdir): a setup that relied on it finds its index or model
// elsewhere, and should know why.
func noteRelativeXDG(cmd *cobra.Command) {
	for _, env := range []string{"XDG_DATA_HOME", "XDG_CACHE_HOME"} {
		if v := os.Getenv(env); v != "" && !filepath.IsAbs(v) {
			fmt.Fprintf(cmd.ErrOrStderr(), "clipidx: %s=%q is not an absolute path, so it is ignored (as the XDG specification says) for the folder under HOME; set it to an absolute path\n", env, v)
		}
	}
}
