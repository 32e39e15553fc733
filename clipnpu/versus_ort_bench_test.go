package clipnpu

import (
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/anchors"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/rss"
)

var (
	versusONNX = flag.String("clipnpu.versus-onnx", "", "folder written by internal/anchors/ort_clip_export.py from -clipnpu.versus-model, BenchmarkVersusORT's graphs; empty: skip")
	versusNode = flag.String("clipnpu.versus-node", "node", "node, BenchmarkVersusORT's runner of onnxruntime-node")
	versusORT  = flag.String("clipnpu.versus-ort", "", "folder holding ort_clip_bench.mjs and its node_modules (as internal/anchors/ort_avx2.py writes); empty: internal/anchors")
)

// startORT starts internal/anchors/ort_clip_bench.mjs --serve: a node
// process holding the ONNX graphs of the same model in onnxruntime-node
// sessions set up as Immich sets up its own, running one pass each time it
// is asked. It skips b when a piece is missing, saying how to get it.
func startORT(b *testing.B, dir string, images, texts int) *anchors.Process {
	anchorsDir := *versusORT
	if anchorsDir == "" {
		anchorsDir = filepath.Join("..", "internal", "anchors")
	}
	anchorsDir, err := filepath.Abs(anchorsDir)
	if err != nil {
		b.Fatal(err)
	}
	node, err := exec.LookPath(*versusNode)
	if err != nil {
		b.Skipf("no node (%v): apt-get install nodejs npm", err)
	}
	if _, err := os.Stat(filepath.Join(anchorsDir, "node_modules", "onnxruntime-node")); err != nil {
		b.Skip("no onnxruntime-node: npm ci --prefix internal/anchors")
	}
	for _, tower := range []string{"visual", "textual"} {
		if _, err := os.Stat(filepath.Join(dir, tower, "model.onnx")); err != nil {
			b.Skipf("no ONNX graphs (%v): /usr/bin/python3 internal/anchors/ort_clip_export.py MODEL %s", err, dir)
		}
	}
	cmd := exec.Command(node, filepath.Join(anchorsDir, "ort_clip_bench.mjs"), "--serve", dir,
		"--images", strconv.Itoa(images), "--texts", strconv.Itoa(texts))
	cmd.Dir = anchorsDir // where node finds node_modules
	b.Logf("ONNX Runtime runner: %s", anchorsDir)
	cmd.Stderr = os.Stderr
	p, err := anchors.Start(cmd)
	if err != nil {
		b.Fatalf("ONNX Runtime anchor: %v", err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// BenchmarkVersusORT runs ViT-H/14 passes (an image pass of 4 and a text
// pass of 8 prompts of 77 tokens, as `bench model`) alternately with ONNX
// Runtime's float32 passes of the same weights, as BenchmarkVersusTorch
// does with PyTorch's: a clipidx pass, an ONNX Runtime pass, and so on, each
// b.N times. It reports the medians of the per-pair ratios (img-ratio,
// txt-ratio: clipidx's wall time over ONNX Runtime's; img-cpu-ratio,
// txt-cpu-ratio by process CPU time), their ranges, and the median seconds
// of each side. Between pairs it measures the float32 FMA peak
// (gemm.PeakF32 on every core, peak-gflops) and reports each side's pass
// as a fraction of it (img-peak-frac, img-ort-peak-frac, and txt-). ONNX
// Runtime's fraction is also the lowest img-ratio (txt-ratio) a float32
// pass could reach: the ratio of a pass running at the peak throughout. ONNX Runtime always runs float32 (as Immich does on CPUs);
// -clipnpu.versus-precision sets clipidx's. See internal/anchors/README.md:
//
//	clipidx model random h14 /tmp/h14
//	/usr/bin/python3 internal/anchors/ort_clip_export.py /tmp/h14 /tmp/h14-onnx
//	npm ci --prefix internal/anchors
//	go test ./clipnpu -run XXX -bench VersusORT -benchtime 8x -args \
//	    -clipnpu.versus-model=/tmp/h14 -clipnpu.versus-onnx=/tmp/h14-onnx \
//	    [-clipnpu.versus-precision=bf16] [-clipnpu.versus-kernel=avx512]
//
// To stand in for an AVX2-only CPU on one with AVX-512, both sides run
// without it: ONNX Runtime from the copy internal/anchors/ort_avx2.py
// writes (-clipnpu.versus-ort=DIR), clipidx with
// GODEBUG=cpu.avx512f=off,cpu.avx512bw=off,cpu.avx512vl=off,cpu.avx512dq=off,cpu.avx512cd=off.
func BenchmarkVersusORT(b *testing.B) {
	if *versusModel == "" || *versusONNX == "" {
		b.Skip("no model: -clipnpu.versus-model=DIR -clipnpu.versus-onnx=ONNXDIR (internal/anchors/README.md)")
	}
	prec := *versusPrec
	if prec != "f32" && prec != "bf16" {
		b.Fatalf("-clipnpu.versus-precision %q: want f32 or bf16", prec)
	}
	const images, texts = 4, 8
	anchor := startORT(b, *versusONNX, images, texts) // first: it skips when a piece is missing
	ours, cfg, note := versusPasses(b, prec, images, texts)
	b.Logf("clipidx %s on %s %s (CPU features used: %s) against ONNX Runtime f32",
		prec, gemm.Kernel(), note, strings.Join(gemm.Features(), " "))
	gflop := map[string]float64{"img": cfg.ImageFLOPs() * images / 1e9, "txt": cfg.TextFLOPs(cfg.Text.Context) * texts / 1e9}
	threads := runtime.NumCPU()

	ratios := map[string][]float64{}
	for b.Loop() {
		for _, which := range []string{"image", "text"} {
			key := map[string]string{"image": "img", "text": "txt"}[which]
			b.StopTimer()
			// ONNX Runtime's threads spin on for a while after its pass
			// (the FMA peak measured within 200 ms of it came out 8%
			// low; 100 ms later it was level): let them stop first.
			time.Sleep(100 * time.Millisecond)
			c0, cerr := rss.CPUTime()
			b.StartTimer()
			t0 := time.Now()
			if err := ours[which](); err != nil {
				b.Fatal(err)
			}
			wall := time.Since(t0).Seconds()
			b.StopTimer()
			c1, err := rss.CPUTime()
			// The float32 FMA peak between the pair's passes, and what
			// fraction of it each side's pass used; measured before
			// ONNX Runtime's pass, as its spinning threads would lower
			// it (409 against 442-447 GFLOP/s on Zen 5).
			peak := gemm.PeakF32(threads, 200*time.Millisecond)
			ow, oc, err2 := anchor.Time(which)
			if err2 != nil {
				b.Fatalf("ONNX Runtime anchor: %v", err2)
			}
			b.StartTimer()
			if peak > 0 {
				ratios["peak-gflops"] = append(ratios["peak-gflops"], peak)
				ratios[key+"-peak-frac"] = append(ratios[key+"-peak-frac"], gflop[key]/wall/peak)
				ratios[key+"-ort-peak-frac"] = append(ratios[key+"-ort-peak-frac"], gflop[key]/ow.Seconds()/peak)
			}
			ratios[key+"-ratio"] = append(ratios[key+"-ratio"], wall/ow.Seconds())
			ratios[key+"-s"] = append(ratios[key+"-s"], wall)
			ratios[key+"-ort-s"] = append(ratios[key+"-ort-s"], ow.Seconds())
			if err == nil && cerr == nil && oc > 0 {
				ratios[key+"-cpu-ratio"] = append(ratios[key+"-cpu-ratio"], (c1-c0).Seconds()/oc.Seconds())
			}
		}
	}
	for name, rs := range ratios {
		s := slices.Clone(rs)
		slices.Sort(s)
		b.ReportMetric(s[len(s)/2], name)
		b.ReportMetric(s[0], name+"-min")
		b.ReportMetric(s[len(s)-1], name+"-max")
	}
	b.Logf("image pass seconds, clipidx %s; ONNX Runtime %s", fmtSeconds(ratios["img-s"]), fmtSeconds(ratios["img-ort-s"]))
}

// versusPasses opens -clipnpu.versus-model with precision prec and the
// kernel -clipnpu.versus-kernel, checks it is ViT-H/14-shaped, and returns
// its image and text passes, warmed up (the second packs the weights),
// with its config and the backend's device note.
func versusPasses(b *testing.B, prec string, images, texts int) (map[string]func() error, Config, string) {
	if *versusKernel != "" {
		if err := gemm.SetKernel(*versusKernel); err != nil {
			b.Fatalf("-clipnpu.versus-kernel: %v", err)
		}
		b.Cleanup(func() { gemm.SetKernel("") })
	} else {
		// The kernels clipidx's commands run: chosen by measurement on
		// this CPU (measured afresh here, nothing kept).
		c, err := gemm.Choose(gemm.ChooseOptions{Threads: runtime.NumCPU()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { gemm.SetKernel(""); gemm.SetBF16Kernel("") })
		b.Logf("kernels chosen by measurement: %s; %s", c.Summary(gemm.ContestF32), c.Summary(gemm.ContestBF16))
	}
	var o OpenOptions
	o.Precision = prec
	o.PackEarly = true // the steady state of a long build, after the two warm-ups
	m, err := Open(*versusModel, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	cfg, err := LoadConfig(*versusModel)
	if err != nil {
		b.Fatal(err)
	}
	if cfg.Vision.Hidden != 1280 || cfg.Text.Hidden != 1024 {
		b.Fatalf("%s is not ViT-H/14-shaped (vision width %d, text width %d)", *versusModel, cfg.Vision.Hidden, cfg.Text.Hidden)
	}
	be, err := m.Backend(BothTowers)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 5))
	S := cfg.Vision.ImageSize
	px := make([]float32, images*3*S*S)
	for i := range px {
		px[i] = rng.Float32()*2 - 1
	}
	ids := benchPrompts(rng, texts, cfg.Text.Context, cfg.Text)
	ours := map[string]func() error{
		"image": func() error { _, err := be.EncodeImages(px, images); return err },
		"text":  func() error { _, err := be.EncodeTexts(ids, texts); return err },
	}
	for range 2 {
		for _, fn := range ours {
			if err := fn(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return ours, cfg, be.Info().DeviceNote
}
