package main

import (
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// exportFixtureBundle exports the tiny-clip-h fixture as a taconite-style
// bundle (packed bfp16ebs8 weights, 4 images and 8 prompts a pass) with its
// reference records, tokenizer and reference images.
func exportFixtureBundle(t *testing.T) string {
	t.Helper()
	src := fixtures.TinyModel(t)
	dir := t.TempDir()
	if err := clipnpu.ExportTinyBundle(src, dir); err != nil {
		t.Fatal(err)
	}
	if !clipnpu.IsBundle(dir) {
		t.Fatal("the export is not a bundle")
	}
	return dir
}

// TestCheckBundleEmulated runs `check` on a bundle with --device auto and
// cpu. Without an NPU both run the replay on the CPU-emulated device; every
// stage must pass at the bf16 gates, and the output must say which device
// ran and why.
func TestCheckBundleEmulated(t *testing.T) {
	dir := exportFixtureBundle(t)
	cases := []struct {
		device string
		note   string // in the device line
	}{
		{"auto", "no usable NPU ("},
		{"cpu", "device cpu"},
	}
	for _, c := range cases {
		t.Run(c.device, func(t *testing.T) {
			if c.device == "auto" && !noNPU() {
				t.Skip("this machine has /dev/accel; auto may pick the NPU")
			}
			out, errOut, code := runCLI(t, "check", dir, "--device", c.device)
			if code != 0 || !strings.Contains(out, "ALL CHECKS PASSED") || strings.Contains(out, "[FAIL]") {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			for _, want := range []string{
				"on " + clipnpu.DeviceEmulatedNPU + " (", c.note, "emulated on the CPU",
				"tok_test 11", "pixels 6",
				"image tower: cosine", "(gate 0.999)", "text tower: cosine", "(gate 0.998)",
				"zero-shot: top-1 agrees on 7/7", "end to end from files: zero-shot top-1 agrees on 7/7",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			// The float32 logit gate is not applied to bf16 numerics: the
			// logit comparison is an [info] line.
			if strings.Contains(out, "(gate 0.001)") || !strings.Contains(out, "[info] refset 0 zero-shot: max |logit diff|") {
				t.Errorf("logits gated as float32:\n%s", out)
			}
			// 12 tok_tests, 7 pixel checks, 2 towers, top-1, prompt ids,
			// end to end (no float32 logit gate).
			if n := strings.Count(out, "[ok]"); n != 24 {
				t.Errorf("%d [ok] lines, want 24:\n%s", n, out)
			}
		})
	}
}

// TestBundleDevicesCLI checks the other devices on a bundle: npu fails
// clearly without one, reference refuses bundles, and info says auto would
// emulate the kernels on the CPU.
func TestBundleDevicesCLI(t *testing.T) {
	if !noNPU() {
		t.Skip("this machine has /dev/accel")
	}
	dir := exportFixtureBundle(t)
	out, _, code := runCLI(t, "check", dir, "--device", "npu")
	if code != 1 || !strings.Contains(out, "[FAIL] load model") || !strings.Contains(out, "/dev/accel") || !strings.Contains(out, "--device cpu") {
		t.Errorf("check --device npu without an NPU: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "check", dir, "--device", "reference")
	if code != 1 || !strings.Contains(out, "[FAIL] load model") || !strings.Contains(out, "taconite NPU bundle") {
		t.Errorf("check --device reference on a bundle: exit %d\n%s", code, out)
	}
	out, errOut, code := runCLI(t, "info", "--model", dir)
	if code != 0 || !strings.Contains(out, "--device auto would use: cpu (bundle kernels emulated)\n") {
		t.Errorf("info on a bundle without an NPU: exit %d\n%s%s", code, out, errOut)
	}
}
