package clipnpu_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestInspectHuggingFace: a Hugging Face folder's kind and weights summary
// come from the safetensors header; a folder without the file is a
// problem, reported and not fatal.
func TestInspectHuggingFace(t *testing.T) {
	dir := fixtures.TinyModel(t)
	fi := clipnpu.Inspect(dir)
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	ws := fi.Weights
	if fi.Kind != clipnpu.FolderHuggingFace || fi.Error != "" || fi.Path != dir || ws == nil ||
		ws.Dtype != "F32" || ws.Bytes != st.Size() || ws.F16Bytes <= ws.Bytes/3 || ws.F16Bytes >= ws.Bytes*3/4 {
		t.Errorf("Inspect(fixture) = %+v (weights %+v), want huggingface, F32, %d bytes, f16 a little over half", fi, ws, st.Size())
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi := clipnpu.Inspect(empty); fi.Kind != clipnpu.FolderHuggingFace || fi.Weights != nil || !strings.Contains(fi.Error, "model.safetensors is missing") {
		t.Errorf("folder without weights: %+v", fi)
	}
}

// TestInspectBundle: a bundle's contexts are its distinct xclbins (of its
// GEMMs and ops, sorted), its batches the v_batch and t_batch params; a
// missing param is reported with what could be read.
func TestInspectBundle(t *testing.T) {
	write := func(vBatch bool) string {
		dir := t.TempDir()
		w := bundle.NewWriter()
		if vBatch {
			w.Param("v_batch", 4)
		}
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
		return dir
	}
	dir := write(true)
	want := clipnpu.FolderInfo{Path: dir, Kind: clipnpu.FolderBundle, Contexts: 3, ImageBatch: 4, TextBatch: 8,
		Xclbins: []string{"kernels/gemm.xclbin", "kernels/mha.xclbin", "kernels/tmha.xclbin"}}
	if fi := clipnpu.Inspect(dir); !reflect.DeepEqual(fi, want) {
		t.Errorf("Inspect(bundle) = %+v, want %+v", fi, want)
	}
	dir = write(false)
	fi := clipnpu.Inspect(dir)
	if fi.Kind != clipnpu.FolderBundle || !strings.Contains(fi.Error, "v_batch") || fi.TextBatch != 8 || fi.Contexts != 3 {
		t.Errorf("bundle without v_batch: %+v", fi)
	}
}

// TestInspectNoFolder: nothing at the path, or a file, is reported by kind.
func TestInspectNoFolder(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent")
	if fi := clipnpu.Inspect(absent); fi.Kind != clipnpu.FolderMissing || fi.Error != "no folder at "+absent {
		t.Errorf("absent: %+v", fi)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if fi := clipnpu.Inspect(file); fi.Kind != clipnpu.FolderUnknown || !strings.Contains(fi.Error, "is not a folder") {
		t.Errorf("file: %+v", fi)
	}
}
