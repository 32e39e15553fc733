package anchors

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

	if runtime.GOARCH == "amd64" {
		checkAVX2Copy(t, node, dir)
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

// checkAVX2Copy writes the copy of the runner that ort_avx2.py makes and
// checks it: libonnxruntime.so.1 differs from the installed one in one
// byte, the AVX-512F test's je (0x74) made a jmp (0xEB), and the copy's
// runner still gives torch's embeddings of the export in dir.
func checkAVX2Copy(t *testing.T, node, dir string) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "ort-avx2")
	out, err := exec.Command("/usr/bin/python3", "ort_avx2.py", dest).CombinedOutput()
	if err != nil {
		t.Fatalf("ort_avx2.py: %v\n%s", err, out)
	}
	lib := filepath.Join("node_modules", "onnxruntime-node", "bin", "napi-v6", "linux", "x64", "libonnxruntime.so.1")
	was, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.ReadFile(filepath.Join(dest, lib))
	if err != nil {
		t.Fatal(err)
	}
	if len(now) != len(was) {
		t.Fatalf("the copied library has %d bytes, the installed one %d", len(now), len(was))
	}
	var diffs []int
	for i := range was {
		if was[i] != now[i] {
			diffs = append(diffs, i)
		}
	}
	if len(diffs) != 1 || was[diffs[0]] != 0x74 || now[diffs[0]] != 0xEB {
		t.Fatalf("ort_avx2.py changed bytes at %v; want one je (0x74) made a jmp (0xEB)", diffs)
	}
	cmd := exec.Command(node, filepath.Join(dest, "ort_clip_bench.mjs"), "--check", dir)
	cmd.Dir = dest
	out, err = cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), ": ok") != 2 {
		t.Fatalf("the copy's ort_clip_bench.mjs --check: %v\n%s", err, out)
	}
}
