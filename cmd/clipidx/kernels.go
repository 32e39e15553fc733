package main

// The kernel choice: the first time clipidx runs the model on a CPU it
// times the float32, bf16 and search-scan kernels the CPU runs and keeps
// the fastest in the user's cache folder (internal/gemm's chooser); and
// --precision auto, resolved from that choice.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/userdir"
	"github.com/clipidx/clipidx/search"
)

// contestSearch names the search scan's contest in the kept choice.
const contestSearch = "search"

// kernelRun is the kernel choice of one command.
type kernelRun struct {
	once   sync.Once
	choice *gemm.Choice // nil when an override chose, or nothing ran
	note   string       // why there is no choice, or what went wrong keeping it
}

// kernels is reset by newRoot, so that each command (and each in-process
// test run) chooses, or reads the kept choice, again.
var kernels = &kernelRun{}

// kernelOverride names the environment variable that chooses a kernel
// instead of the measurement, or "".
func kernelOverride() string {
	for _, k := range []string{"CLIPIDX_GEMM_KERNEL", "CLIPIDX_BF16_KERNEL"} {
		if os.Getenv(k) != "" {
			return k
		}
	}
	return ""
}

// chooseKernels reads this CPU's kept kernel choice or, the first time,
// measures it (a fraction of a second) and keeps it in
// userdir.Cache()/clipidx; it applies the choice to the float32, bf16
// and search kernels. Once per command; nil when CLIPIDX_GEMM_KERNEL or
// CLIPIDX_BF16_KERNEL chooses instead (nothing is measured then).
func chooseKernels() *gemm.Choice { return kernels.choose(false) }

// keptKernels applies this CPU's kept choice, if there is one, and
// measures nothing: for commands that scan stored vectors without the
// model.
func keptKernels() *gemm.Choice { return kernels.choose(true) }

func (k *kernelRun) choose(keptOnly bool) *gemm.Choice {
	if keptOnly && k.choice == nil {
		if kernelOverride() != "" {
			return nil
		}
		c, _ := gemm.Choose(gemm.ChooseOptions{Dir: cacheDir(), Threads: g.threads, Extra: []gemm.Contest{searchContest()}, KeptOnly: true})
		if c != nil {
			_ = search.SetKernel(c.Contests[contestSearch].Chosen)
		}
		return c
	}
	k.once.Do(func() {
		if env := kernelOverride(); env != "" {
			k.note = "not measured: " + env + " chooses"
			return
		}
		c, err := gemm.Choose(gemm.ChooseOptions{Dir: cacheDir(), Threads: g.threads, Extra: []gemm.Contest{searchContest()}})
		if cacheDir() == "" {
			k.note = "no user cache folder to keep it in: set HOME, or XDG_CACHE_HOME to an absolute path"
		}
		if err != nil {
			k.note = err.Error()
			fmt.Fprintf(os.Stderr, "clipidx: %v (measured again next time)\n", err)
		}
		if err := search.SetKernel(c.Contests[contestSearch].Chosen); err != nil {
			k.note = err.Error()
		}
		k.choice = c
	})
	return k.choice
}

// cacheDir is where the kernel choice is kept: userdir.Cache()/clipidx,
// or "" (nothing kept) when the system has no cache folder.
func cacheDir() string {
	d, err := userdir.Cache()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "clipidx")
}

// searchContest is the search scan's kernels as a contest of the chooser.
func searchContest() gemm.Contest {
	c := gemm.Contest{Name: contestSearch, Unit: "GB/s", Incumbent: search.DefaultKernel()}
	for _, tr := range search.ScanTrials() {
		c.Entrants = append(c.Entrants, gemm.Entrant{Name: tr.Name, Work: tr.Bytes / 1e9, Run: tr.Run})
	}
	return c
}

// modelOnCPU reports whether the --model folder runs on the CPU's fast
// path with the global flags: a Hugging Face folder on device auto or
// cpu (the reference forward and bundles use none of the chosen kernels).
func modelOnCPU() bool {
	return (g.device == "auto" || g.device == "cpu") && !clipnpu.IsBundle(g.model)
}

// resolvePrecision turns --precision auto into what the model runs:
// bf16 where the model runs on the CPU, the CPU has a bf16 kernel (AMX or
// AVX512_BF16) and the chooser measured it faster than float32 (or, with
// a kernel override, measured nothing), f32 elsewhere. It returns the
// resolved precision and why, and leaves f32 and bf16 as they are.
func resolvePrecision(precision string) (string, string) {
	if precision != "auto" {
		return precision, "--precision " + precision
	}
	if !modelOnCPU() {
		return "f32", "auto: the model does not run on the CPU's fast path"
	}
	_, err := gemm.BF16Kernel()
	var c *gemm.Choice
	if err == nil {
		c = chooseKernels()
	}
	return resolveAuto(err, c, kernels.note)
}

// resolveAuto is auto's rule: f32 without a bf16 kernel (bf16Err), bf16
// when the choice c measured it faster, or when an override chose the
// kernels (c nil: nothing measured, note says why).
func resolveAuto(bf16Err error, c *gemm.Choice, note string) (string, string) {
	switch {
	case bf16Err != nil:
		return "f32", "auto: no bf16 kernel on this CPU"
	case c == nil:
		return "bf16", "auto: the CPU has a bf16 kernel (" + note + ")"
	case c.BF16Faster():
		return "bf16", "auto: bf16 measured faster, " + c.Summary(gemm.ContestPrecision)
	}
	return "f32", "auto: bf16 not measured faster, " + c.Summary(gemm.ContestPrecision)
}

// defaultF32 makes float32 the precision of a command about the numbers
// (embed, check) unless --precision or CLIPIDX_PRECISION asks otherwise.
func defaultF32(changed bool) {
	if !changed && os.Getenv("CLIPIDX_PRECISION") == "" {
		g.precision = "f32"
	}
}
