//go:build amd64 && !purego

package gemm

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestFeaturesWithoutAVX512F runs this test binary again with AVX-512F
// turned off through GODEBUG (as BenchmarkVersusORT's stand-in for an
// AVX2-only CPU does): no AVX-512 feature may be listed then, nor an
// AVX-512 kernel chosen, though GODEBUG leaves AVX512_BF16 on.
func TestFeaturesWithoutAVX512F(t *testing.T) {
	if os.Getenv("GEMM_FEATURES_CHILD") == "1" {
		c := defaultKernel()
		os.Stdout.WriteString("FEATURES " + strings.Join(Features(), " ") + "\nKERNEL " + c.kr.name + "\n")
		return
	}
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BF16 {
		t.Skip("this CPU has no AVX-512F with AVX512_BF16: nothing for GODEBUG to hide")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFeaturesWithoutAVX512F$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GEMM_FEATURES_CHILD=1", "GODEBUG=cpu.avx512f=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var features, kernel string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "FEATURES "); ok {
			features = v
		}
		if v, ok := strings.CutPrefix(line, "KERNEL "); ok {
			kernel = v
		}
	}
	if kernel == "" {
		t.Fatalf("the child printed no kernel: %s", out)
	}
	if strings.Contains(features, "512") {
		t.Errorf("with GODEBUG=cpu.avx512f=off, Features() = %q: lists AVX-512 features", features)
	}
	if !strings.Contains(features, "AVX2") {
		t.Errorf("Features() = %q without AVX2", features)
	}
	if kernel == "avx512" {
		t.Errorf("with GODEBUG=cpu.avx512f=off the default kernel is %s", kernel)
	}
}
