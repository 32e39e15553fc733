//go:build amd64 && !purego

package search

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// needTool returns the path of a tool the test needs, or skips (fails
// under CI=true, where the tools are expected to be installed).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (CI=true): %v", name, err)
		}
		t.Skipf("%s not found: install it (binutils for objdump) to run this check", name)
	}
	return p
}

// TestVDPBF16PSEncoding disassembles every instruction kernel_amd64.s
// spells as BYTE directives and compares it with the Intel mnemonic in
// the comment beside it.
func TestVDPBF16PSEncoding(t *testing.T) {
	objdump := needTool(t, "objdump")
	src, err := os.ReadFile("kernel_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	byteRE := regexp.MustCompile(`BYTE \$0x([0-9a-fA-F]{2})`)
	var code []byte
	var want []string
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, "BYTE $") {
			continue
		}
		instr, comment, ok := strings.Cut(line, "//")
		if !ok {
			t.Fatalf("BYTE line without the mnemonic in a comment: %q", line)
		}
		for _, m := range byteRE.FindAllStringSubmatch(instr, -1) {
			b, _ := strconv.ParseUint(m[1], 16, 8)
			code = append(code, byte(b))
		}
		want = append(want, normAsm(comment))
	}
	if len(want) < 16 {
		t.Fatalf("found %d BYTE-encoded instructions, want the 16 VDPBF16PS of the kernel at least", len(want))
	}
	bin := filepath.Join(t.TempDir(), "code.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "-M", "intel", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	// Lines look like "   6:\t62 b2 5e 40 52 e1    \tvdpbf16ps zmm4,zmm20,zmm17".
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) >= 3 && strings.HasSuffix(strings.TrimSpace(f[0]), ":") {
			got = append(got, normAsm(strings.Join(f[2:], " ")))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("objdump decoded %d instructions from %d BYTE lines:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instruction %d: the bytes decode as %q, the comment says %q", i, got[i], want[i])
		}
	}
}

// normAsm lower-cases an instruction and drops blanks.
func normAsm(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), ""))
}

// TestGeneratedAssemblyCurrent: kernel_amd64.s is what gen_amd64.py
// writes today.
func TestGeneratedAssemblyCurrent(t *testing.T) {
	python := needTool(t, "python3")
	dst := filepath.Join(t.TempDir(), "kernel_amd64.s")
	if out, err := exec.Command(python, "gen_amd64.py", dst).CombinedOutput(); err != nil {
		t.Fatalf("gen_amd64.py: %v\n%s", err, out)
	}
	want, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("kernel_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("kernel_amd64.s differs from gen_amd64.py's output: run python3 gen_amd64.py")
	}
}

// TestKernelSwitches: the feature variables decide what kernels() offers
// and the default (AVX-512 > AVX2 > Go), as on CPUs that lack them.
func TestKernelSwitches(t *testing.T) {
	avx2, avx512, bf16 := useAVX2, useAVX512, useBF16
	t.Cleanup(func() { useAVX2, useAVX512, useBF16 = avx2, avx512, bf16 })
	for _, c := range []struct {
		avx2, avx512, bf16 bool
		want               []kernelKind
		def                kernelKind
	}{
		{true, true, true, []kernelKind{kernelGo, kernelAVX2, kernelAVX512, kernelBF16}, kernelAVX512},
		{true, true, false, []kernelKind{kernelGo, kernelAVX2, kernelAVX512}, kernelAVX512},
		{true, false, false, []kernelKind{kernelGo, kernelAVX2}, kernelAVX2},
		{false, false, false, []kernelKind{kernelGo}, kernelGo},
	} {
		useAVX2, useAVX512, useBF16 = c.avx2, c.avx512, c.bf16
		if got := kernels(); !slices.Equal(got, c.want) || defaultKernel() != c.def {
			t.Errorf("AVX2 %v, AVX-512 %v, BF16 %v: kernels %v default %v, want %v and %v",
				c.avx2, c.avx512, c.bf16, got, defaultKernel(), c.want, c.def)
		}
	}
}
