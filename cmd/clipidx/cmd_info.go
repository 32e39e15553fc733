package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/xdna"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/search"
)

func init() { subcommands = append(subcommands, newInfoCmd) }

// hardwareNote says plainly what has and has not run on an NPU.
const hardwareNote = "The NPU path (clipnpu/xdna ioctls and the bundle replay) has never run on NPU hardware: " +
	"it is built from the amdxdna uAPI header, XRT and taconite's public sources, and tested here only " +
	"against an emulated device (kernel semantics on the CPU), the struct layouts and the request numbers. " +
	"Without a usable NPU a bundle runs on that emulated device, on the CPU."

// autoEmulated is what --device auto uses for a bundle without a usable
// NPU: the replay on clipnpu's CPU-emulated device.
const autoEmulated = "cpu (bundle kernels emulated)"

// infoJSON is `clipidx info --json`.
type infoJSON struct {
	NPU struct {
		Usable        bool              `json:"usable"`
		Reason        string            `json:"reason,omitempty"` // why not, when not usable
		Node          string            `json:"node,omitempty"`
		Driver        string            `json:"driver,omitempty"`
		DriverVersion string            `json:"driver_version,omitempty"`
		Firmware      string            `json:"firmware,omitempty"`
		AIE           *xdna.AIEMetadata `json:"aie,omitempty"`
		ContextsInUse *int              `json:"contexts_in_use,omitempty"`
		ContextLimit  int               `json:"context_limit,omitempty"` // estimate from the column count
		FreeContexts  *int              `json:"free_contexts,omitempty"`
		MemlockLimit  string            `json:"memlock_limit,omitempty"`
		Notes         []string          `json:"notes,omitempty"`
	} `json:"npu"`
	Model clipnpu.FolderInfo `json:"model"`
	CPU   struct {
		Kernel string `json:"kernel"` // the GEMM the CPU path runs
		// BF16 is the kernel --precision bf16 runs, or why there is none.
		BF16     string   `json:"bf16"`
		Search   string   `json:"search"`   // the kernel of the search scan
		Features []string `json:"features"` // the SIMD features the kernels look at
		Threads  int      `json:"threads"`  // what --threads 0 gives
		// Precision is what --precision (auto by default) resolves to for
		// --model, and why.
		Precision    string `json:"precision"`
		PrecisionWhy string `json:"precision_why"`
		// Choice is the kernel choice measured on this CPU (nil when an
		// override chose), and where it is kept.
		Choice     *gemm.Choice `json:"choice,omitempty"`
		ChoiceNote string       `json:"choice_note,omitempty"`
		// Decoders is where the HEIC and AVIF decoders' compiled code is
		// kept between runs, and how big it is.
		Decoders struct {
			Dir     string `json:"dir,omitempty"`
			Bytes   int64  `json:"bytes"`
			Problem string `json:"problem,omitempty"`
			// HEVC is the ffmpeg that decodes HEICs' HEVC pictures, or
			// "builtin" for libde265 as WebAssembly.
			HEVC string `json:"hevc"`
			// HEVCProblem is why that ffmpeg failed its check (then
			// HEICs are decoded by libde265, each after a failed try).
			HEVCProblem string `json:"hevc_problem,omitempty"`
		} `json:"decoders"`
		// Packed is the folder where the model's weights are kept packed
		// for the kernels (`clipidx model path --packed`), and what it
		// holds.
		Packed struct {
			Dir     string `json:"dir,omitempty"`
			Files   int    `json:"files"`
			Bytes   int64  `json:"bytes"`
			Problem string `json:"problem,omitempty"`
		} `json:"packed"`
	} `json:"cpu"`
	AutoDevice        string `json:"auto_device"` // what --device auto would use
	HardwareValidated bool   `json:"hardware_validated"`
	Note              string `json:"note"`
}

func newInfoCmd() *cobra.Command {
	var asJSON bool
	var node string
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Describe the NPU (driver, firmware, AIE array, free contexts) and where the model would run",
		Long: "info probes the AMD XDNA NPU through the amdxdna driver (without allocating anything), " +
			"reports its node, driver and firmware versions, AIE array and free hardware contexts, or " +
			"explains why no NPU is usable, and says which device --device auto would pick for --model.\n\n" + hardwareNote,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := gatherInfo(node, g.model)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			printInfo(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	cmd.Flags().StringVar(&node, "node", "", "device node to probe (default: the first /dev/accel/accel* driven by amdxdna)")
	return cmd
}

// gatherInfo probes the device, the CPU kernels and the model folder.
func gatherInfo(node, model string) infoJSON {
	var r infoJSON
	r.Note = hardwareNote
	di, err := xdna.Probe(node)
	if err != nil {
		r.NPU.Reason = err.Error()
	} else {
		n := &r.NPU
		n.Usable = true
		n.Node, n.Driver, n.DriverVersion = di.Node, di.Driver, di.DriverVersion
		if di.FirmwareKnown {
			n.Firmware = di.FirmwareString()
		}
		if di.AIEKnown {
			a := di.AIE
			n.AIE = &a
		}
		n.ContextLimit = di.ContextLimit
		if di.ContextsKnown {
			in, free := di.ContextsInUse, di.FreeContexts()
			n.ContextsInUse = &in
			if free >= 0 {
				n.FreeContexts = &free
			}
		}
		if di.MemlockLimit != 0 {
			n.MemlockLimit = fmtLimit(di.MemlockLimit)
		}
		n.Notes = di.Notes
		if !di.AIEKnown {
			n.Usable = false
			n.Reason = "the driver did not answer the AIE metadata query; it is probably too old"
		}
	}

	r.Model = clipnpu.Inspect(model)
	m := &r.Model
	if m.Kind == clipnpu.FolderMissing {
		m.Error += "; run `clipidx model pull` or pass --model"
	}

	r.CPU.Choice = chooseKernels()
	r.CPU.ChoiceNote = kernels.note
	r.CPU.Precision, r.CPU.PrecisionWhy = resolvePrecision(g.precision)
	r.CPU.Kernel = gemm.Kernel()
	r.CPU.Features = gemm.Features()
	if k, err := gemm.BF16Kernel(); err == nil {
		r.CPU.BF16 = k
	} else {
		r.CPU.BF16 = "unavailable: " + err.Error()
	}
	r.CPU.Search = search.Kernel()
	r.CPU.Decoders.HEVC = "builtin"
	if p, err := preprocess.CheckFFmpeg(context.Background()); p != "" {
		r.CPU.Decoders.HEVC = p
		if err != nil {
			r.CPU.Decoders.HEVCProblem = err.Error()
		}
	}
	if dir, size, err := preprocess.CodeCache(); dir != "" || err != nil {
		d := &r.CPU.Decoders
		d.Dir, d.Bytes = dir, size
		if err != nil {
			d.Problem = err.Error()
		}
	}
	if dir := packCacheDir(); dir != "" {
		p := &r.CPU.Packed
		p.Dir = dir
		var err error
		if p.Files, p.Bytes, err = packCacheSize(dir); err != nil {
			p.Problem = err.Error()
		}
	}
	r.CPU.Threads = runtime.GOMAXPROCS(0)
	if g.threads > 0 {
		r.CPU.Threads = g.threads // what --threads / CLIPIDX_THREADS ask for
	}
	switch r.AutoDevice = clipnpu.AutoDevice(m.Kind == clipnpu.FolderBundle, r.NPU.Usable); {
	case m.Kind == clipnpu.FolderBundle && m.Error != "":
		r.AutoDevice = "none (the bundle cannot be read)"
	case r.AutoDevice == clipnpu.DeviceEmulatedNPU:
		r.AutoDevice = autoEmulated
	}
	return r
}

// measuredAs is ": " and the chooser's summary of contest when it timed
// kernels against each other, else "".
func measuredAs(c *gemm.Choice, contest string) string {
	if c == nil || len(c.Contests[contest].Figures) < 2 {
		return ""
	}
	return ": " + c.Summary(contest)
}

func fmtLimit(n uint64) string {
	if n == ^uint64(0) {
		return "unlimited"
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func printInfo(w io.Writer, r infoJSON) {
	n := r.NPU
	fmt.Fprintln(w, "NPU")
	if n.Node == "" {
		fmt.Fprintf(w, "  not usable: %s\n", n.Reason)
	} else {
		fmt.Fprintf(w, "  device:     %s (%s %s)\n", n.Node, n.Driver, n.DriverVersion)
		fw := n.Firmware
		if fw == "" {
			fw = "unknown"
		}
		fmt.Fprintf(w, "  firmware:   %s\n", fw)
		if n.AIE != nil {
			a := n.AIE
			fmt.Fprintf(w, "  AIE:        version %d.%d, %d columns x %d rows (core tiles: %d rows from row %d; mem rows %d; shim rows %d)\n",
				a.VersionMajor, a.VersionMinor, a.Cols, a.Rows, a.Core.RowCount, a.Core.RowStart, a.Mem.RowCount, a.Shim.RowCount)
		}
		switch {
		case n.FreeContexts != nil:
			fmt.Fprintf(w, "  contexts:   %d free of about %d (%d in use machine-wide)\n", *n.FreeContexts, n.ContextLimit, *n.ContextsInUse)
		default:
			fmt.Fprintf(w, "  contexts:   unknown (the driver did not list them)\n")
		}
		if n.MemlockLimit != "" {
			fmt.Fprintf(w, "  memlock:    %s (CLIP ViT-H/14 pins about 1.3 GiB; raise with `ulimit -l unlimited` if lower)\n", n.MemlockLimit)
		}
		for _, s := range n.Notes {
			fmt.Fprintf(w, "  note:       %s\n", s)
		}
		if !n.Usable {
			fmt.Fprintf(w, "  not usable: %s\n", n.Reason)
		}
	}
	fmt.Fprintln(w, "CPU")
	fmt.Fprintf(w, "  kernels:    %s, %d %s\n", r.CPU.Kernel, r.CPU.Threads, plural(r.CPU.Threads, "thread", "threads"))
	c := r.CPU.Choice
	fmt.Fprintf(w, "  bf16:       %s%s (--precision bf16)\n", r.CPU.BF16, measuredAs(c, gemm.ContestBF16))
	fmt.Fprintf(w, "  search:     %s%s\n", r.CPU.Search, measuredAs(c, contestSearch))
	fmt.Fprintf(w, "  precision:  %s (%s)\n", r.CPU.Precision, r.CPU.PrecisionWhy)
	switch {
	case c != nil && c.Path != "":
		how := fmt.Sprintf("measured in %.2f s on %s", c.Seconds, c.Measured.Format("2006-01-02"))
		if c.Cached {
			how = "measured on " + c.Measured.Format("2006-01-02")
		}
		fmt.Fprintf(w, "  choice:     kept in %s (%s; delete the file to measure again)\n", c.Path, how)
	case c != nil:
		fmt.Fprintf(w, "  choice:     measured in %.2f s, not kept (%s)\n", c.Seconds, r.CPU.ChoiceNote)
	default:
		fmt.Fprintf(w, "  choice:     %s\n", r.CPU.ChoiceNote)
	}
	if len(r.CPU.Features) > 0 {
		fmt.Fprintf(w, "  features:   %s\n", strings.Join(r.CPU.Features, " "))
	}
	if d := r.CPU.Decoders; d.Dir != "" {
		what := "nothing kept yet: compiled at the first HEIC or AVIF"
		if d.Bytes > 0 {
			what = fmt.Sprintf("%.1f MB; delete the folder to compile them again", float64(d.Bytes)/1e6)
		}
		fmt.Fprintf(w, "  decoders:   HEIC/AVIF machine code kept in %s (%s)\n", d.Dir, what)
	}
	if p := r.CPU.Decoders.Problem; p != "" {
		fmt.Fprintf(w, "  decoders:   %s\n", p)
	}
	if p, e := r.CPU.Decoders.HEVC, r.CPU.Decoders.HEVCProblem; e != "" {
		fmt.Fprintf(w, "  HEIC:       %s fails its check (%s): HEICs are decoded by libde265 as WebAssembly, each after a failed try (CLIPIDX_HEVC=builtin skips the try)\n", p, e)
	} else if p != "builtin" {
		fmt.Fprintf(w, "  HEIC:       HEVC pictures decoded by %s (about half the CPU time of the built-in libde265; checked: the same pixels on a test picture; CLIPIDX_HEVC=builtin turns it off)\n", p)
	} else {
		fmt.Fprintf(w, "  HEIC:       HEVC pictures decoded by libde265 as WebAssembly (with ffmpeg on PATH or in CLIPIDX_FFMPEG, about half the CPU time and the same pixels)\n")
	}
	switch p := r.CPU.Packed; {
	case p.Problem != "":
		fmt.Fprintf(w, "  packed:     %s\n", p.Problem)
	case p.Dir != "" && p.Files == 0:
		fmt.Fprintf(w, "  packed:     weights packed for the kernels are kept in %s (none yet: the first start in bf16, or in f32 with the AVX-512 or AVX2 kernel, writes them)\n", p.Dir)
	case p.Dir != "":
		fmt.Fprintf(w, "  packed:     weights packed for the kernels kept in %s (%.2f GB in %d files; rebuilt when needed; remove them with rm -r %s)\n",
			p.Dir, float64(p.Bytes)/1e9, p.Files, p.Dir)
	}
	m := r.Model
	fmt.Fprintln(w, "Model")
	fmt.Fprintf(w, "  folder:     %s (%s)\n", m.Path, m.Kind)
	if m.Error != "" {
		fmt.Fprintf(w, "  problem:    %s\n", m.Error)
	}
	if ws := m.Weights; ws != nil {
		gb := func(n int64) string {
			if n >= 1e9 {
				return fmt.Sprintf("%.2f GB", float64(n)/1e9)
			}
			return fmt.Sprintf("%.1f MB", float64(n)/1e6)
		}
		switch ws.Dtype {
		case "F32":
			if g.weights == "f16" {
				fmt.Fprintf(w, "  weights:    F32, %s in model.safetensors, rounded to f16 at load (--weights f16): %s in memory\n", gb(ws.Bytes), gb(ws.F16Bytes))
			} else {
				packed := ""
				if clipnpu.PacksStoredF32(modelOptions(clipnpu.BothTowers)) {
					packed = " (packed for the float32 kernel once the passes have paid for it)"
				}
				fmt.Fprintf(w, "  weights:    F32, %s in model.safetensors, memory-mapped as stored%s; --weights f16 holds %s\n", gb(ws.Bytes), packed, gb(ws.F16Bytes))
			}
		default:
			fmt.Fprintf(w, "  weights:    %s, %s in model.safetensors, memory-mapped and kept 16-bit\n", ws.Dtype, gb(ws.Bytes))
		}
	}
	if m.Kind == clipnpu.FolderBundle && m.Error == "" {
		fmt.Fprintf(w, "  needs:      %d hardware contexts; %d images and %d prompts a pass\n", m.Contexts, m.ImageBatch, m.TextBatch)
		if n.FreeContexts != nil && *n.FreeContexts < m.Contexts {
			fmt.Fprintf(w, "  warning:    only %d contexts are free; close other NPU programs\n", *n.FreeContexts)
		}
	}
	fmt.Fprintf(w, "--device auto would use: %s\n", r.AutoDevice)
	fmt.Fprintf(w, "Hardware status: %s\n", r.Note)
}
