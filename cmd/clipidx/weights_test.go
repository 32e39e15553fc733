package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/gemm"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestWeightsF16Embed: --weights f16 embeds the fixture's float32 model
// with its matrices rounded at load: within the f16 gates (cosine 0.99999,
// relative error, max |diff|) of the stored weights' embeddings, and not
// bit-identical to them (the rounding ran).
func TestWeightsF16Embed(t *testing.T) {
	model := fixtures.TinyModel(t)
	img := filepath.Join(model, "images", "checker_320x240.png")
	embed := func(weights string) [][]float32 {
		out := filepath.Join(t.TempDir(), "e.f32")
		if _, stderr, err := runModelCmd("--model", model, "--weights", weights, "embed", "-o", out, "--image", img, "--text", "a photo of a cat"); err != nil {
			t.Fatalf("--weights %s: %v\n%s", weights, err, stderr)
		}
		return readRows(t, out, dimOf(t, out, 2))
	}
	stored, rounded := embed("stored"), embed("f16")
	same := true
	for i := range stored {
		checkEmbedding(t, fmt.Sprintf("row %d, stored vs f16-rounded weights", i), rounded[i], stored[i], compare.F16Weights().Image)
		for j := range stored[i] {
			same = same && stored[i][j] == rounded[i][j]
		}
	}
	if same {
		t.Error("--weights f16 gave the stored weights' embeddings bit for bit: nothing was rounded")
	}
}

// dimOf is the row width of a file holding rows float32 rows.
func dimOf(t *testing.T, path string, rows int) int {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Size()) / 4 / rows
}

// TestWeightsIndexIdentity: an index is about the model, not the
// arithmetic: built with the stored weights it accepts searches and builds
// with --weights f16 and --precision bf16 (where the CPU has it) and the
// other way round; status says what the last build used, and the search
// results of the settings agree.
func TestWeightsIndexIdentity(t *testing.T) {
	model := fixtures.TinyModel(t)
	photos := t.TempDir()
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "i.db")
	run := func(args ...string) (string, string, int) {
		return runCLI(t, append([]string{"--model", model, "--db", db}, args...)...)
	}
	// --precision f32 explicitly: the default (auto) is bf16 on CPUs
	// where bf16 was measured faster.
	if _, errs, code := run("--precision", "f32", "build", "--json", photos); code != 0 {
		t.Fatalf("build: %d %s", code, errs)
	}
	if out, _, _ := run("status", "--json"); !strings.Contains(out, `"weights":"stored"`) || !strings.Contains(out, `"precision":"f32"`) {
		t.Errorf("status --json of a stored-weights index: %s", out)
	}
	top := func(args ...string) string {
		t.Helper()
		out, errs, code := run(append(args, "search", "--json", "a cat")...)
		var hits []struct{ Path string }
		if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 {
			t.Fatalf("search %v: exit %d, %q %q", args, code, out, errs)
		}
		return hits[0].Path
	}
	want := top()
	if got := top("--weights", "f16"); got != want {
		t.Errorf("search --weights f16 on a stored-weights index: top %s, want %s", got, want)
	}
	if _, errs, code := run("--weights", "f16", "build", photos); code != 0 {
		t.Errorf("build --weights f16 onto a stored-weights index: exit %d, %q", code, errs)
	}
	if _, errs, code := run("--weights", "f16", "build", "--reindex", "--json", photos); code != 0 {
		t.Fatalf("build --reindex --weights f16: %d %s", code, errs)
	}
	out, errs, code := run("status")
	if code != 0 || !strings.Contains(out, "weights rounded to f16 at load") || !strings.Contains(out, "folders:     "+photos+"\n") {
		t.Errorf("status of an f16 index: exit %d, %q %q", code, out, errs)
	}
	if out, _, _ := run("status", "--json"); !strings.Contains(out, `"weights":"f16"`) {
		t.Errorf("status --json of an f16 index: %s", out)
	}
	if got := top(); got != want {
		t.Errorf("stored weights on an f16 index: top %s, want %s", got, want)
	}
	if _, err := gemm.BF16Kernel(); err != nil {
		t.Logf("--precision bf16 not tried: %v", err)
		return
	}
	if got := top("--precision", "bf16"); got != want {
		t.Errorf("search --precision bf16: top %s, want %s", got, want)
	}
}

// TestWeightsFlagErrors: bad --weights values and combinations are usage
// errors (exit 2) before anything is loaded.
func TestWeightsFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--weights", "bf16", "embed", "--text", "x"},
		{"--weights", "F16", "embed", "--text", "x"},
		{"--weights", "f16", "bench", "model", "--random", "b32"},
	} {
		if _, errs, code := runCLI(t, args...); code != 2 || !strings.Contains(errs, "--weights") {
			t.Errorf("%v: exit %d, %q; want 2 naming --weights", args, code, errs)
		}
	}
	t.Setenv("CLIPIDX_WEIGHTS", "f8")
	if _, errs, code := runCLI(t, "embed", "--text", "x"); code != 2 || !strings.Contains(errs, "CLIPIDX_WEIGHTS takes") {
		t.Errorf("CLIPIDX_WEIGHTS=f8: exit %d, %q", code, errs)
	}
}

// TestModelRandom writes a ViT-B/32-shaped stand-in, measures it through
// bench model as stored and rounded, and refuses to overwrite it.
func TestModelRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 0.6 GB model")
	}
	dir := filepath.Join(t.TempDir(), "b32")
	out, errs, code := runCLI(t, "model", "random", "b32", dir, "--dtype", "f32", "--json")
	if code != 0 {
		t.Fatalf("model random: %d %s", code, errs)
	}
	var w modelRandomResult
	if err := json.Unmarshal([]byte(out), &w); err != nil || w.Bytes < 500e6 || w.Dir != dir {
		t.Fatalf("model random --json: %v %+v", err, w)
	}
	for _, tc := range []struct{ weights, want string }{
		{"stored", "f32 (as stored, memory-mapped)"},
		{"f16", "f16 (rounded from f32 at load)"},
	} {
		// --precision f32: the float32 kernel's packing is under test.
		out, errs, code := runCLI(t, "--model", dir, "--weights", tc.weights, "--precision", "f32", "bench", "model", "--images", "1", "--texts", "1", "--runs", "1", "--json")
		if code != 0 {
			t.Fatalf("bench --weights %s: %d %s", tc.weights, code, errs)
		}
		var r clipnpu.BenchResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if tc.weights == "stored" && clipnpu.PacksStoredF32(clipnpu.Options{}) {
			// bench packs in its second warm-up where the kernel gains by it
			want = "f32 (as stored, memory-mapped; 147 matrices, 0.50 GB, since packed for the float32 kernel)"
		}
		if r.Weights != want || r.Model != "random-b32-seed1-f32" || r.ImageGFLOP < 8 {
			t.Errorf("bench --weights %s: weights %q model %q %.1f GFLOP an image, want weights %q", tc.weights, r.Weights, r.Model, r.ImageGFLOP, want)
		}
	}
	if _, errs, code := runCLI(t, "model", "random", "b32", dir); code == 0 || !strings.Contains(errs, "is not empty") {
		t.Errorf("second write: exit %d, %q", code, errs)
	}
	bundle := t.TempDir() // a bundle has no model.safetensors: still refused
	if err := os.WriteFile(filepath.Join(bundle, "manifest.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runCLI(t, "model", "random", "b32", bundle); code == 0 || !strings.Contains(errs, "manifest.txt") {
		t.Errorf("write into a bundle folder: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(bundle, "config.json")); err == nil {
		t.Error("config.json was written into the bundle folder")
	}
	if _, errs, code := runCLI(t, "model", "random", "l14", t.TempDir()); code != 2 {
		t.Errorf("shape l14: exit %d, %q", code, errs)
	}
}

// TestBuildLoadsTheModelOnlyForWork: build identifies the model without
// loading it, loads it only when a file needs embedding, and loads it first
// when the index is about to be created or reset. A folder whose weights
// cannot be rounded to f16 (a value beyond its range, in bytes the identity
// hash does not sample) shows each case.
func TestBuildLoadsTheModelOnlyForWork(t *testing.T) {
	model := copyFixture(t)
	photos := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	run := func(db string, args ...string) (string, string, int) {
		return runCLI(t, append([]string{"--model", model, "--db", db, "--weights", "f16"}, args...)...)
	}
	if out, errs, code := run(db, "build", "--json", photos); code != 0 || !strings.Contains(out, `"added":0`) {
		t.Fatalf("first build (creates the index): exit %d, %q %q", code, out, errs)
	}
	// Break the weights without changing their identity.
	const big = "vision_model.encoder.layers.0.mlp.fc1.weight"
	before, err := clipnpu.Identify(model, clipnpu.Options{Weights: "f16", Towers: clipnpu.ImageTower})
	if err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(model, "model.safetensors")
	orig, _ := os.ReadFile(st)
	patched := false
	for i := 300; i < 20000 && !patched; i += 97 {
		os.WriteFile(st, orig, 0o644)
		patchWeight(t, st, big, i, -70000)
		after, err := clipnpu.Identify(model, clipnpu.Options{Weights: "f16", Towers: clipnpu.ImageTower})
		patched = err == nil && after.WeightsHash == before.WeightsHash
	}
	if !patched {
		t.Fatal("found no weight outside the identity hash's samples")
	}
	if out, errs, code := run(db, "build", "--json", photos); code != 0 || !strings.Contains(out, `"added":0`) {
		t.Errorf("no-op build (the model must not load): exit %d, %q %q", code, out, errs)
	}
	img, err := os.ReadFile(filepath.Join(model, "images", "gradient_256.png"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(photos, "a.png"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(db, "build", photos); code == 0 || !strings.Contains(errs, "load model") || !strings.Contains(errs, big) || !strings.Contains(errs, "-70000") {
		t.Errorf("build with a new image: exit %d, %q", code, errs)
	}
	if out, errs, code := run(db, "status", "--json"); code != 0 || !strings.Contains(out, `"images":0`) || !strings.Contains(out, `"failed":0`) {
		t.Errorf("status after the failed load: exit %d, %q %q", code, out, errs)
	}
	// A new index is not created, and --reindex does not reset one, when
	// the model cannot load.
	fresh := filepath.Join(t.TempDir(), "new.db")
	if _, errs, code := run(fresh, "build", photos); code == 0 || !strings.Contains(errs, "-70000") {
		t.Errorf("build into a new index: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed first build left %s behind: %v", fresh, err)
	}
	stored := filepath.Join(t.TempDir(), "stored.db")
	if out, errs, code := runCLI(t, "--model", model, "--db", stored, "build", "--json", photos); code != 0 || !strings.Contains(out, `"added":1`) {
		t.Fatalf("stored weights load: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := run(stored, "build", "--reindex", photos); code == 0 || !strings.Contains(errs, "-70000") {
		t.Errorf("--reindex with a model that cannot load: exit %d, %q", code, errs)
	}
	if out, _, code := runCLI(t, "--db", stored, "status", "--json"); code != 0 || !strings.Contains(out, `"images":1`) || !strings.Contains(out, `"weights":"stored"`) {
		t.Errorf("the index was reset by a build that could not load its model: %s", out)
	}
}

// patchWeight sets element i of an F32 tensor in a safetensors file.
func patchWeight(t *testing.T, path, name string, i int, v float32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Dtype   string `json:"dtype"`
		Offsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr[name], &e); err != nil || e.Dtype != "F32" {
		t.Fatalf("tensor %s: %v %+v", name, err, e)
	}
	binary.LittleEndian.PutUint32(b[8+int(n)+e.Offsets[0]+4*i:], math.Float32bits(v))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
