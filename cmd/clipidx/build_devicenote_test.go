package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/gemm"
)

// packingKernel names a float32 kernel of this CPU that packs its
// weights, and so keeps them in the packed-weights folder; the test skips
// where there is none.
func packingKernel(t *testing.T) string {
	t.Helper()
	defer gemm.SetKernel("")
	for _, k := range []string{"avx512", "avx2"} {
		if gemm.SetKernel(k) == nil && gemm.PackPays() {
			return k
		}
	}
	t.Skip("no float32 kernel of this CPU packs its weights")
	return ""
}

// TestBuildDeviceNoteSaysPackedNotKept: where the packed-weights folder
// cannot be made (a regular file in its place), a build still succeeds,
// and the last build's device note, which status shows in text and JSON,
// says why the packed weights were not kept.
func TestBuildDeviceNoteSaysPackedNotKept(t *testing.T) {
	model := fixtures.TinyModel(t)
	kernel := packingKernel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	t.Setenv("HOME", root)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	t.Setenv("CLIPIDX_GEMM_KERNEL", kernel) // nothing measured
	t.Setenv("CLIPIDX_BF16_KERNEL", "")
	packed := packCacheDir()
	if err := os.MkdirAll(filepath.Dir(packed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packed, []byte("not a folder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "index.db"), "--model", model, "--precision", "f32"}
	run := func(args ...string) string {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(g, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", args[0], code, out, errs)
		}
		return out
	}
	run("build", photos)

	var st struct {
		LastBuild struct {
			Device     string `json:"device"`
			DeviceNote string `json:"device_note"`
		} `json:"last_build"`
	}
	js := run("status", "--json")
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	note := st.LastBuild.DeviceNote
	if !strings.Contains(note, "packed weights not saved") || !strings.Contains(note, packed) {
		t.Errorf("last build's device note %q does not say why the packed weights in %s were not saved", note, packed)
	}
	if out := run("status"); note == "" || !strings.Contains(out, note) {
		t.Errorf("status does not show the device note %q:\n%s", note, out)
	}

	// A build adding to the index loads the model when it meets work,
	// after it began: its record says the same (once it had no note).
	writeJPEG(t, filepath.Join(photos, "new.jpg"))
	run("build", photos)
	js = run("status", "--json")
	st.LastBuild.DeviceNote = "" // absent from the JSON when empty
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	if n := st.LastBuild.DeviceNote; !strings.Contains(n, "packed weights not saved") {
		t.Errorf("a build adding to the index: device note %q, want why the packed weights were not saved", n)
	}
}
