package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// noNPU reports whether this machine has no accel nodes (the usual case for
// the build machines); the device-present paths are not reachable there.
func noNPU() bool {
	_, err := os.Stat("/dev/accel")
	return err != nil
}

func TestInfoHFFolder(t *testing.T) {
	dir := fixtures.TinyModel(t)
	// --precision f32: whether info speaks of packing depends on it.
	out, errOut, code := runCLI(t, "info", "--model", dir, "--precision", "f32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"NPU\n", "(huggingface)", "--device auto would use: cpu", "never run on NPU hardware",
		"weights:    F32, ", " MB in model.safetensors, memory-mapped as stored", "; --weights f16 holds "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Where the kernel packs float32 weights, info says when.
	const packed = "(packed for the float32 kernel once the passes have paid for it)"
	if want := clipnpu.PacksStoredF32(clipnpu.Options{}); strings.Contains(out, packed) != want {
		t.Errorf("kernel packs weights: %v, yet the output says %q: %v\n%s", want, packed, !want, out)
	}
	if noNPU() && (!strings.Contains(out, "not usable") || !strings.Contains(out, "/dev/accel")) {
		t.Errorf("no explanation of the missing NPU:\n%s", out)
	}
}

func TestInfoJSONBundle(t *testing.T) {
	dir := t.TempDir()
	w := bundle.NewWriter()
	w.Param("v_batch", 4)
	w.Param("t_batch", 8)
	w.Line("xclbin", "gemm", "kernels/gemm.xclbin", "MLIR_AIE")
	w.Line("gemm", "v_qkv", "ctx=gemm", "insts=kernels/a.bin", "M=256", "K=1280", "N=3840", "b_bytes=5529600")
	w.Line("gemm", "v_o", "ctx=gemm", "insts=kernels/b.bin", "M=256", "K=1280", "N=1280", "b_bytes=1843200")
	w.Line("op", "v_mha", "xclbin=kernels/mha.xclbin", "insts=kernels/c.bin", "name=MLIR_AIE")
	w.Line("op", "t_mha", "xclbin=kernels/tmha.xclbin", "insts=kernels/d.bin", "name=MLIR_AIE")
	w.I32("tok.0.ids", []int{2}, []int32{1, 2})
	if err := w.Write(dir); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "info", "--json", "--model", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r infoJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := r.Model
	if m.Kind != "bundle" || m.Error != "" || m.Contexts != 3 || m.ImageBatch != 4 || m.TextBatch != 8 {
		t.Errorf("model = %+v", m)
	}
	if want := []string{"kernels/gemm.xclbin", "kernels/mha.xclbin", "kernels/tmha.xclbin"}; strings.Join(m.Xclbins, ",") != strings.Join(want, ",") {
		t.Errorf("xclbins = %v, want %v", m.Xclbins, want)
	}
	if r.HardwareValidated || !strings.Contains(r.Note, "never run on NPU hardware") {
		t.Errorf("hardware status = %v, %q", r.HardwareValidated, r.Note)
	}
	if noNPU() {
		if r.NPU.Usable || !strings.Contains(r.NPU.Reason, "/dev/accel") || r.AutoDevice != autoEmulated {
			t.Errorf("npu = %+v, auto = %q", r.NPU, r.AutoDevice)
		}
	}

	// A damaged bundle is reported, not fatal.
	if err := os.WriteFile(filepath.Join(dir, "manifest.txt"), []byte("version 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, "info", "--model", dir)
	if code != 0 || !strings.Contains(out, "problem:") || !strings.Contains(out, "version 9") {
		t.Errorf("damaged bundle: exit %d\n%s", code, out)
	}
}

func TestInfoOtherNodes(t *testing.T) {
	out, _, code := runCLI(t, "info", "--json", "--node", os.DevNull, "--model", filepath.Join(t.TempDir(), "absent"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var r infoJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.NPU.Usable || !strings.Contains(r.NPU.Reason, "none is driven by amdxdna") {
		t.Errorf("probe of /dev/null: %+v", r.NPU)
	}
	if r.Model.Kind != "missing" || !strings.Contains(r.Model.Error, "model pull") || r.AutoDevice != "cpu" {
		t.Errorf("absent model: %+v, auto %q", r.Model, r.AutoDevice)
	}
}

// TestInfoCPU: info names the GEMM kernel the CPU path runs, and the JSON
// carries it (this build's own answer, from internal/gemm).
func TestInfoCPU(t *testing.T) {
	out, _, code := runCLI(t, "--model", t.TempDir(), "info")
	if code != 0 || !strings.Contains(out, "kernels:") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	js, _, code := runCLI(t, "--model", t.TempDir(), "info", "--json")
	var r struct {
		CPU struct {
			Kernel  string `json:"kernel"`
			Threads int    `json:"threads"`
		} `json:"cpu"`
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil || code != 0 || r.CPU.Kernel == "" || r.CPU.Threads < 1 {
		t.Fatalf("exit %d, %v, cpu %+v in %s", code, err, r.CPU, js)
	}
}

// TestInfoWeights: info reads model.safetensors' header and says what the
// weights take as stored and rounded; a folder without it is a problem.
func TestInfoWeights(t *testing.T) {
	dir := fixtures.TinyModel(t)
	js, errs, code := runCLI(t, "--model", dir, "info", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r infoJSON
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	ws := r.Model.Weights
	if ws == nil || ws.Dtype != "F32" || ws.Bytes != st.Size() || ws.F16Bytes <= ws.Bytes/3 || ws.F16Bytes >= ws.Bytes*3/4 {
		t.Errorf("weights %+v, want F32, %d bytes, f16 a little over half", ws, st.Size())
	}
	out, _, code := runCLI(t, "--model", dir, "--weights", "f16", "info")
	if code != 0 || !strings.Contains(out, "rounded to f16 at load (--weights f16): ") {
		t.Errorf("info --weights f16:\n%s", out)
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, "--model", empty, "info")
	if code != 0 || !strings.Contains(out, "problem:") || !strings.Contains(out, "model.safetensors is missing") {
		t.Errorf("folder without weights: exit %d\n%s", code, out)
	}
}

// TestInfoPacked: info says where the packed weights are kept and what
// the folder holds, in text and JSON.
func TestInfoPacked(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := filepath.Join(cache, "clipidx", "packed")
	type packed struct {
		Dir   string `json:"dir"`
		Files int    `json:"files"`
		Bytes int64  `json:"bytes"`
	}
	read := func() packed {
		t.Helper()
		js, errs, code := runCLI(t, "--model", t.TempDir(), "info", "--json")
		var r struct {
			CPU struct {
				Packed packed `json:"packed"`
			} `json:"cpu"`
		}
		if err := json.Unmarshal([]byte(js), &r); err != nil || code != 0 {
			t.Fatalf("exit %d, %v: %s%s", code, err, js, errs)
		}
		return r.CPU.Packed
	}
	if got := read(); got != (packed{Dir: dir}) {
		t.Errorf("before any packing: %+v, want the folder and nothing in it", got)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"m-image-bf16-1.pack": 3000, "m-text-bf16-2.pack": 500} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(); got != (packed{Dir: dir, Files: 2, Bytes: 3500}) {
		t.Errorf("with two packed files: %+v, want 2 files of 3500 bytes", got)
	}
	out, _, code := runCLI(t, "--model", t.TempDir(), "info")
	if code != 0 || !strings.Contains(out, "packed:     weights packed for the kernels kept in "+dir) || !strings.Contains(out, "in 2 files") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}
