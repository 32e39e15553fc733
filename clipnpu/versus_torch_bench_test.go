package clipnpu

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	versusModel  = flag.String("clipnpu.versus-model", "", "ViT-H/14-shaped model folder for BenchmarkVersusTorch (clipidx model random h14 DIR); empty: skip")
	versusPython = flag.String("clipnpu.versus-python", "/usr/bin/python3", "python with torch, BenchmarkVersusTorch's anchor")
	versusPrec   = flag.String("clipnpu.versus-precision", "f32", "f32 or bf16: clipidx's --precision and the anchor's --dtype")
	versusKernel = flag.String("clipnpu.versus-kernel", "", "float32 GEMM kernel (avx512, avx2, neon, go; as CLIPIDX_GEMM_KERNEL); empty: the default for this CPU")
)

// startTorch starts internal/anchors/torch_clip_bench.py --serve: a
// python process holding the same model shape, running one pass each time
// it is asked.
func startTorch(b *testing.B, images, texts int, dtype string) *anchors.Process {
	script, err := filepath.Abs(filepath.Join("..", "internal", "anchors", "torch_clip_bench.py"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(*versusPython, script, "--serve", "--random", "h14", "--dtype", dtype,
		"--images", strconv.Itoa(images), "--texts", strconv.Itoa(texts), "--threads", "2")
	cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=PASSIVE") // idle threads sleep while clipidx runs
	cmd.Stderr = os.Stderr
	p, err := anchors.Start(cmd)
	if err != nil {
		b.Skipf("no PyTorch anchor (is torch installed for %s?): %v", *versusPython, err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// BenchmarkVersusTorch runs ViT-H/14 passes (an image pass of 4 and a text
// pass of 8 prompts of 77 tokens, as `bench model`) alternately with
// PyTorch's on the same shapes, both processes holding their model: a
// clipidx pass, a PyTorch pass, and so on, each b.N times. On a shared
// host whose speed drifts by tens of percent from minute to minute, pairs
// of passes seconds apart compare far better than runs minutes apart. It
// reports the medians of the per-pair ratios (img_x_torch, txt_x_torch:
// clipidx's wall time over PyTorch's; cpu_ variants by process CPU time)
// and their ranges. Run it with OPENBLAS_CORETYPE=SkylakeX on Intel
// AVX-512 (OpenBLAS 0.3.21 misdetects Sapphire and Emerald Rapids):
//
//	clipidx model random h14 /tmp/h14
//	OPENBLAS_CORETYPE=SkylakeX go test ./clipnpu -run XXX -bench VersusTorch -benchtime 8x \
//	    -args -clipnpu.versus-model=/tmp/h14 [-clipnpu.versus-precision=bf16]
func BenchmarkVersusTorch(b *testing.B) {
	if *versusModel == "" {
		b.Skip("no model: -clipnpu.versus-model=DIR (clipidx model random h14 DIR)")
	}
	prec := *versusPrec
	if prec != "f32" && prec != "bf16" {
		b.Fatalf("-clipnpu.versus-precision %q: want f32 or bf16", prec)
	}
	const images, texts = 4, 8
	ours, _, note := versusPasses(b, prec, images, texts)
	anchor := startTorch(b, images, texts, prec) // --dtype has the same names
	b.Logf("clipidx %s on %s %s against PyTorch %s; OPENBLAS_CORETYPE=%q", prec, gemm.Kernel(), note, prec, os.Getenv("OPENBLAS_CORETYPE"))

	ratios := map[string][]float64{}
	var ourImg, torchImg []float64
	for i := 0; b.Loop(); i++ {
		for _, which := range []string{"image", "text"} {
			b.StopTimer()
			c0, cerr := rss.CPUTime()
			b.StartTimer()
			t0 := time.Now()
			if err := ours[which](); err != nil {
				b.Fatal(err)
			}
			wall := time.Since(t0).Seconds()
			b.StopTimer()
			c1, err := rss.CPUTime()
			tw, tc, err2 := anchor.Time(which)
			if err2 != nil {
				b.Fatalf("PyTorch anchor: %v", err2)
			}
			b.StartTimer()
			key := map[string]string{"image": "img", "text": "txt"}[which]
			ratios[key+"_x_torch"] = append(ratios[key+"_x_torch"], wall/tw.Seconds())
			if err == nil && cerr == nil && tc > 0 {
				ratios["cpu_"+key+"_x_torch"] = append(ratios["cpu_"+key+"_x_torch"], (c1-c0).Seconds()/tc.Seconds())
			}
			if which == "image" {
				ourImg, torchImg = append(ourImg, wall), append(torchImg, tw.Seconds())
			}
		}
	}
	for name, rs := range ratios {
		s := slices.Clone(rs)
		slices.Sort(s)
		b.ReportMetric(s[len(s)/2], name)
		b.ReportMetric(s[0], name+"_min")
		b.ReportMetric(s[len(s)-1], name+"_max")
	}
	b.Logf("image pass seconds, clipidx %s; PyTorch %s", fmtSeconds(ourImg), fmtSeconds(torchImg))
}

func fmtSeconds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}
