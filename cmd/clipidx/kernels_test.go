package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/gemm"
)

// TestMain points the user's cache folder (kept kernel choices, packed
// weights) at a temporary one, so that tests never write the real one,
// and drops a CLIPIDX_PRECISION the caller's environment may hold.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clipidx-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Go's build cache defaults to a folder under XDG_CACHE_HOME: keep
	// the usual one, or every test that builds the binary (e2eBinary)
	// compiles it all from nothing, minutes instead of seconds.
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && filepath.IsAbs(strings.TrimSpace(string(out))) {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Setenv("CLIPIDX_PRECISION", "")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestResolveAuto: --precision auto is bf16 where the chooser measured
// bf16 faster (injected choice), f32 where it measured it slower or the
// CPU has no bf16 kernel, bf16 on a bf16 CPU when an override chose the
// kernels without measuring.
func TestResolveAuto(t *testing.T) {
	choice := func(prec string) *gemm.Choice {
		return &gemm.Choice{Contests: map[string]gemm.Outcome{
			gemm.ContestPrecision: {Chosen: prec, Unit: "GFLOP/s", Figures: map[string]float64{"f32": 130, "bf16": 300}},
		}}
	}
	noBF16 := errors.New("bf16 needs AVX512_BF16 or AMX-BF16; this CPU has neither (AVX2 only)")
	for _, tc := range []struct {
		name string
		err  error
		c    *gemm.Choice
		want string
	}{
		{"bf16 measured faster", nil, choice("bf16"), "bf16"},
		{"bf16 not faster", nil, choice("f32"), "f32"},
		{"no bf16 kernel", noBF16, nil, "f32"},
		{"no bf16 kernel, choice says bf16", noBF16, choice("bf16"), "f32"},
		{"override, not measured", nil, nil, "bf16"},
	} {
		got, why := resolveAuto(tc.err, tc.c, "not measured: CLIPIDX_GEMM_KERNEL chooses")
		if got != tc.want || !strings.HasPrefix(why, "auto: ") {
			t.Errorf("%s: %q (%s), want %q", tc.name, got, why, tc.want)
		}
	}
	if p, _ := resolvePrecision("f32"); p != "f32" {
		t.Errorf("resolvePrecision(f32) = %q", p)
	}
}

// TestInfoKernelChoice: info measures the kernels on a cold cache, keeps
// the choice in the cache folder and reads it back on the next run; it
// says what --precision auto resolves to.
func TestInfoKernelChoice(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	model := fixtures.TinyModel(t)
	info := func() infoJSON {
		t.Helper()
		out, errs, code := runCLI(t, "--model", model, "info", "--json")
		var r infoJSON
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("info: exit %d %s %s", code, out, errs)
		}
		return r
	}
	r := info()
	c := r.CPU.Choice
	if c == nil || c.Cached || filepath.Dir(c.Path) != filepath.Join(cache, "clipidx") || !strings.HasPrefix(filepath.Base(c.Path), "kernels-") {
		t.Fatalf("cold cache: choice %+v, note %q", c, r.CPU.ChoiceNote)
	}
	if _, err := os.Stat(c.Path); err != nil {
		t.Fatal(err)
	}
	want := "f32"
	if _, err := gemm.BF16Kernel(); err == nil && c.BF16Faster() {
		want = "bf16"
	}
	if r.CPU.Precision != want || !strings.Contains(r.CPU.PrecisionWhy, "auto") {
		t.Errorf("precision %q (%s), want %q", r.CPU.Precision, r.CPU.PrecisionWhy, want)
	}
	if f32 := c.Contests[gemm.ContestF32].Chosen; !strings.Contains(r.CPU.Kernel, f32+" (chosen by measurement") && len(c.Contests[gemm.ContestF32].Figures) > 1 {
		t.Errorf("kernel line %q does not give the measured choice %q", r.CPU.Kernel, f32)
	}
	if r2 := info(); r2.CPU.Choice == nil || !r2.CPU.Choice.Cached || r2.CPU.Choice.Path != c.Path {
		t.Errorf("warm cache: %+v", r2.CPU.Choice)
	}
	out, _, _ := runCLI(t, "--model", model, "--precision", "f32", "info")
	if !strings.Contains(out, "precision:  f32 (--precision f32)") || !strings.Contains(out, "kept in "+c.Path) {
		t.Errorf("info --precision f32:\n%s", out)
	}
}

// TestKernelOverrideMeasuresNothing: with CLIPIDX_GEMM_KERNEL set the
// chooser measures nothing and keeps nothing.
func TestKernelOverrideMeasuresNothing(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("CLIPIDX_GEMM_KERNEL", "go")
	defer gemm.SetKernel("")
	out, errs, code := runCLI(t, "--model", t.TempDir(), "info")
	if code != 0 || !strings.Contains(out, "not measured: CLIPIDX_GEMM_KERNEL chooses") || !strings.Contains(out, "portable Go float32") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	if kept, _ := filepath.Glob(filepath.Join(cache, "clipidx", "kernels-*")); len(kept) != 0 {
		t.Errorf("override kept a choice: %v", kept)
	}
}

// TestEmbedDefaultsToF32: embed computes in float32 unless asked, even
// where auto would pick bf16: its output equals --precision f32's bit
// for bit.
func TestEmbedDefaultsToF32(t *testing.T) {
	model := fixtures.TinyModel(t)
	img := filepath.Join(model, "images", "checker_320x240.png")
	embed := func(args ...string) []byte {
		out := filepath.Join(t.TempDir(), "e.f32")
		if _, stderr, err := runModelCmd(append(append([]string{"--model", model}, args...), "embed", "-o", out, "--image", img, "--text", "a cat")...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	def, f32 := embed(), embed("--precision", "f32")
	if !bytes.Equal(def, f32) {
		t.Error("embed without --precision differs from --precision f32")
	}
	if _, err := gemm.BF16Kernel(); err != nil {
		t.Logf("--precision bf16 not tried: %v", err)
		return
	}
	if bytes.Equal(embed("--precision", "bf16"), f32) {
		t.Error("embed --precision bf16 gave float32's bits: the flag was overridden")
	}
}

// TestBuildRecordsResolvedPrecision: a build with the default precision
// records what auto resolved to (f32 or bf16), never "auto".
func TestBuildRecordsResolvedPrecision(t *testing.T) {
	model := fixtures.TinyModel(t)
	db := filepath.Join(t.TempDir(), "i.db")
	if _, errs, code := runCLI(t, "--model", model, "--db", db, "build", filepath.Join(model, "images")); code != 0 {
		t.Fatalf("build: %d %s", code, errs)
	}
	out, _, _ := runCLI(t, "--db", db, "status", "--json")
	want := `"precision":"f32"`
	if _, err := gemm.BF16Kernel(); err == nil {
		if c := chooseKernels(); c == nil || c.BF16Faster() {
			want = `"precision":"bf16"`
		}
	}
	if !strings.Contains(out, want) {
		t.Errorf("status after a default build: want %s in %s", want, out)
	}
}

// TestCheckComparesBF16: a float32 check on the CPU of a CPU with a bf16
// kernel reports how far bf16 lies from float32 on each tower (info
// lines, cosine near 1); the reference device and a CPU without bf16 do
// not.
func TestCheckComparesBF16(t *testing.T) {
	dir := fixtures.TinyModel(t)
	_, noBF16 := gemm.BF16Kernel()
	for _, device := range []string{"cpu", "reference"} {
		out, errs, code := runCLI(t, "check", dir, "--device", device)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", device, code, out, errs)
		}
		want := noBF16 == nil && device == "cpu"
		for _, tower := range []string{"image", "text"} {
			line := "[info] refset 0 " + tower + " tower in bf16 vs float32: cosine min 0.99"
			if strings.Contains(out, line) != want {
				t.Errorf("--device %s: line %q present %v, want %v:\n%s", device, line, !want, want, out)
			}
		}
	}
}

// TestKernelChoicePerThreads: --threads 1 measures the kernels on one
// thread and keeps that choice apart from the one for two (once the
// chooser measured on every core whatever --threads said, and kept one
// choice for all counts).
func TestKernelChoicePerThreads(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	model := fixtures.TinyModel(t)
	choice := func(args ...string) *gemm.Choice {
		t.Helper()
		out, errs, code := runCLI(t, append([]string{"--model", model}, append(args, "info", "--json")...)...)
		var r infoJSON
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.CPU.Choice == nil {
			t.Fatalf("info %v: exit %d %s %s", args, code, out, errs)
		}
		return r.CPU.Choice
	}
	one := choice("--threads", "1")
	if one.Cached || !strings.Contains(one.Key, "|threads 1|") {
		t.Fatalf("--threads 1: cached %v, key %q", one.Cached, one.Key)
	}
	two := choice("--threads", "2")
	if two.Cached || two.Path == one.Path || !strings.Contains(two.Key, "|threads 2|") {
		t.Errorf("--threads 2 after --threads 1: cached %v, key %q, path %q (1 thread: %q)", two.Cached, two.Key, two.Path, one.Path)
	}
	if runtime.GOMAXPROCS(0) == 2 {
		if all := choice(); !all.Cached || all.Path != two.Path {
			t.Errorf("all (2) cores after --threads 2: cached %v, path %q, want %q", all.Cached, all.Path, two.Path)
		}
	}
	if again := choice("--threads", "1"); !again.Cached || again.Path != one.Path {
		t.Errorf("--threads 1 again: cached %v, path %q, want %q", again.Cached, again.Path, one.Path)
	}
}

// TestInfoKernelChoiceNoCacheFolder: with no user cache folder, info said
// the choice was "not kept ()", giving no reason.
func TestInfoKernelChoiceNoCacheFolder(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	prev := kernels
	kernels = &kernelRun{} // measured in this command, as in a new process
	t.Cleanup(func() { kernels = prev })
	out, errs, code := runCLI(t, "--model", fixtures.TinyModel(t), "info", "--json")
	var r infoJSON
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("info: exit %d %s %s", code, out, errs)
	}
	if r.CPU.Choice == nil || r.CPU.Choice.Path != "" || !strings.Contains(r.CPU.ChoiceNote, "no user cache folder") {
		t.Errorf("choice %+v, note %q; want it not kept, saying why", r.CPU.Choice, r.CPU.ChoiceNote)
	}
}
