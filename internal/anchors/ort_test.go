package anchors

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// need skips the test when ok is false, except under CI=true, where what
// the test needs must be installed.
func need(t *testing.T, what, hint string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true: %s", what, hint)
	}
	t.Skipf("%s not available (%s); skipping", what, hint)
}

// TestORTAnchor exports the tiny fixture model with ort_clip_export.py,
// checks ONNX Runtime's embeddings against torch's (ort_clip_bench.mjs
// --check, which must also fail when they differ), then drives
// ort_clip_bench.mjs --serve through Process: passes on request, an
// unknown request refused without ending the process.
func TestORTAnchor(t *testing.T) {
	model := fixtures.TinyModel(t)
	node, err := exec.LookPath("node")
	need(t, "node", "apt-get install nodejs npm", err == nil)
	_, err = os.Stat(filepath.Join("node_modules", "onnxruntime-node"))
	need(t, "onnxruntime-node", "npm ci --prefix internal/anchors", err == nil)
	err = exec.Command("/usr/bin/python3", "-c", "import torch, onnx").Run()
	need(t, "/usr/bin/python3 with torch and onnx", "apt-get install python3-torch python3-onnx", err == nil)

	dir := t.TempDir()
	out, err := exec.Command("/usr/bin/python3", "ort_clip_export.py", "--check", model, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("ort_clip_export.py: %v\n%s", err, out)
	}
	out, err = exec.Command(node, "ort_clip_bench.mjs", "--check", dir).CombinedOutput()
	if err != nil || strings.Count(string(out), ": ok") != 2 {
		t.Fatalf("ort_clip_bench.mjs --check: %v\n%s", err, out)
	}

	// Torch's text embeddings scaled: the check must see it.
	good := filepath.Join(dir, "check", "text_embeds.bin")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), b...)
	bad[3] ^= 0x01 // the top byte of the first float32: its exponent
	if err := os.WriteFile(good, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(node, "ort_clip_bench.mjs", "--check", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "textual") || !strings.Contains(string(out), "FAIL") {
		t.Errorf("--check with altered torch outputs: %v\n%s", err, out)
	}

	p, err := Start(exec.Command(node, "ort_clip_bench.mjs", "--serve", dir, "--images", "2", "--texts", "3"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, req := range []string{"image", "text", "image"} {
		if w, c, err := p.Time(req); err != nil || w <= 0 || c < 0 {
			t.Fatalf("Time(%q) = %v, %v, %v; want a positive wall time", req, w, c, err)
		}
	}
	if _, _, err := p.Time("video"); err == nil || !strings.Contains(err.Error(), "unknown pass") {
		t.Errorf("Time(\"video\"): %v, want the unknown pass refused", err)
	}
	if _, _, err := p.Time("text"); err != nil {
		t.Errorf("Time(\"text\") after a refused request: %v", err)
	}

	if _, err := Start(exec.Command(node, "ort_clip_bench.mjs", "--serve", filepath.Join(dir, "none"))); err == nil ||
		!strings.Contains(err.Error(), "ort_clip_export.py") {
		t.Errorf("--serve on a folder without graphs: %v, want an error naming the exporter", err)
	}
}
