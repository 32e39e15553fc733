//go:build amd64 && !purego

package gemm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// asmKernels are the assembly kernels the tests compare with the Go one.
var asmKernels = []string{"avx512", "avx2"}

// TestKernelSizesAgainstGo runs every product with m, n, k in 1..33 on each
// assembly kernel (through the driver: edge tiles, packers, bias, alpha)
// and on the Go kernel, for every kind of B (float32 [k,n], float32 [n,k]
// read transposed, binary16 and bfloat16 weights), with guard values
// around C and in its ldc padding.
func TestKernelSizesAgainstGo(t *testing.T) {
	for _, name := range asmKernels {
		t.Run(name, func(t *testing.T) {
			useKernel(t, name)
			asm := currentKernel().kr
			p := NewPool(1)
			defer p.Close()
			w := p.workers[0]
			r := rand.New(rand.NewPCG(21, 22))
			const n0 = 33
			for _, kind := range []bKind{bF32N, bF32T, bF16T, bBF16T} {
				// One B, A and bias big enough for every shape; each shape
				// reads its top-left corner with the full strides.
				a := randSlice(r, n0*n0, 1)
				bias := randSlice(r, n0, 3)
				b32 := randSlice(r, n0*n0, 2)
				var b16 []uint16
				switch kind {
				case bF16T:
					b16 = randWeights(r, n0, n0, F16).U16
				case bBF16T:
					b16 = randWeights(r, n0, n0, BF16).U16
				}
				for m := 1; m <= n0; m++ {
					for n := 1; n <= n0; n++ {
						for k := 1; k <= n0; k++ {
							i := (m*n0+n)*n0 + k
							alpha := []float32{1, -0.75, 2.5}[i%3]
							var bv []float32
							if kind != bF32N && i%2 == 0 {
								bv = bias
							}
							g := gemmArgs{a: a, lda: n0, b32: b32, b16: b16, ldb: n0, kind: kind,
								m: m, n: n, k: k, alpha: alpha, bias: bv}
							const margin = 5
							ldc := n + 3
							allA, ca := guarded(m, n, ldc, margin)
							allG, cg := guarded(m, n, ldc, margin)
							g.c, g.ldc, g.kr = ca, ldc, asm
							w.gemmRegion(&g, 0, m, 0, n)
							g.c, g.kr = cg, goKernel
							w.gemmRegion(&g, 0, m, 0, n)
							if err := sameWithin(ca, cg, m, n, ldc, tolerance(k, 1, 2)*2.5+3*0x1p-22); err != nil {
								t.Fatalf("%s kind %d m=%d n=%d k=%d alpha=%v bias=%v: %v", name, kind, m, n, k, alpha, bv != nil, err)
							}
							checkGuards(t, allA, m, n, ldc, margin)
							checkGuards(t, allG, m, n, ldc, margin)
						}
					}
				}
			}
		})
	}
}

// sameWithin compares two [m, n] windows of stride ld.
func sameWithin(got, want []float32, m, n, ld int, tol float64) error {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			g, w := got[i*ld+j], want[i*ld+j]
			if d := math.Abs(float64(g) - float64(w)); !(d <= tol) {
				return fmt.Errorf("c[%d,%d] = %v, Go kernel %v (|diff| %.3g > %.3g)", i, j, g, w, d, tol)
			}
		}
	}
	return nil
}

// TestMicroKernelModes calls each assembly micro-kernel directly on one
// full tile for every depth 1..33 and every store mode (C = alpha·AB,
// C = bias + alpha·AB, C += alpha·AB), with a row stride of A larger than
// k and guard values around and between the rows of C, against the plain
// float64 sum of the same tile.
func TestMicroKernelModes(t *testing.T) {
	for _, name := range append(asmKernels, "go") {
		t.Run(name, func(t *testing.T) {
			useKernel(t, name)
			kr := currentKernel().kr
			r := rand.New(rand.NewPCG(31, 32))
			mr, nr := kr.mr, kr.nr
			for k := 1; k <= 33; k++ {
				lda := k + 7
				a := randSlice(r, (mr-1)*lda+k, 1)
				b := randSlice(r, k*nr, 2)
				bias := randSlice(r, nr, 3)
				for mode := 0; mode < 3; mode++ {
					alpha := []float32{1, 0.5, -1.25}[mode]
					const margin = 9
					ldc := nr + 4
					all, c := guarded(mr, nr, ldc, margin)
					init := randSlice(r, mr*ldc, 1)
					for i := 0; i < mr; i++ {
						copy(c[i*ldc:i*ldc+nr], init[i*ldc:])
					}
					var bp *float32
					if mode == 1 {
						bp = &bias[0]
					}
					runKernel(kr, k, &a[0], lda, &b[0], &c[0], ldc, alpha, bp, mode == 2)
					checkGuards(t, all, mr, nr, ldc, margin)
					for i := 0; i < mr; i++ {
						for j := 0; j < nr; j++ {
							var s float64
							for p := 0; p < k; p++ {
								s += float64(a[i*lda+p]) * float64(b[p*nr+j])
							}
							want := float64(alpha) * s
							switch mode {
							case 1:
								want += float64(bias[j])
							case 2:
								want += float64(init[i*ldc+j])
							}
							if d := math.Abs(float64(c[i*ldc+j]) - want); d > tolerance(k, 1, 2)*1.25+4*0x1p-23 {
								t.Fatalf("k=%d mode %d: c[%d,%d] = %v, want %v (|diff| %.3g)", k, mode, i, j, c[i*ldc+j], want, d)
							}
						}
					}
				}
			}
		})
	}
}

// TestHalfKernel checks the half-width AVX-512 kernel (edge panels of at
// most 16 columns) on every depth 1..33 against the full kernel's left
// half, with guards around its [14, 16] output.
func TestHalfKernel(t *testing.T) {
	useKernel(t, "avx512")
	kr := currentKernel().kr
	r := rand.New(rand.NewPCG(51, 52))
	for k := 1; k <= 33; k++ {
		lda := k + 5
		a := randSlice(r, (kr.mr-1)*lda+k, 1)
		b := randSlice(r, k*kr.nr, 2)
		full := make([]float32, kr.mr*kr.nr)
		runKernel(kr, k, &a[0], lda, &b[0], &full[0], kr.nr, -1.5, nil, false)
		const margin, ldc = 7, 19
		all, c := guarded(kr.mr, kr.nr/2, ldc, margin)
		if !runKernelHalf(kr, k, &a[0], lda, &b[0], &c[0], ldc, -1.5) {
			t.Fatal("no half-width kernel for avx512")
		}
		checkGuards(t, all, kr.mr, kr.nr/2, ldc, margin)
		for i := 0; i < kr.mr; i++ {
			for j := 0; j < kr.nr/2; j++ {
				if g, w := c[i*ldc+j], full[i*kr.nr+j]; g != w {
					t.Fatalf("k=%d: half c[%d,%d] = %v, full kernel %v", k, i, j, g, w)
				}
			}
		}
	}
}

// TestPackersAgainstGo packs a full transposed panel with each assembly
// packer and with packTGo, for every depth 1..80 and every source kind,
// from an odd offset into B, and requires identical bits (NaNs aside, whose
// quieting differs).
func TestPackersAgainstGo(t *testing.T) {
	for _, name := range asmKernels {
		t.Run(name, func(t *testing.T) {
			useKernel(t, name)
			kr := currentKernel().kr
			r := rand.New(rand.NewPCG(41, 42))
			const ldb, pc, j0 = 101, 3, 2
			rows := j0 + kr.nr
			b32 := randSlice(r, rows*ldb, 4)
			b16 := make([]uint16, rows*ldb)
			for i := range b16 {
				b16[i] = uint16(r.Uint32())
			}
			for _, kind := range []bKind{bF32T, bF16T, bBF16T} {
				g := gemmArgs{b32: b32, b16: b16, ldb: ldb, kind: kind, n: rows, k: ldb}
				for kb := 1; kb <= 80; kb++ {
					got := make([]float32, kb*kr.nr+kr.nr)
					want := make([]float32, kb*kr.nr)
					for i := range got {
						got[i] = guard
					}
					done := packKernelT(kr, got, &g, j0, pc, kb)
					if done > kb {
						t.Fatalf("kind %d kb=%d: packer claims %d depths", kind, kb, done)
					}
					packTGo(got, kr.nr, &g, j0, kr.nr, pc, done, kb)
					packTGo(want, kr.nr, &g, j0, kr.nr, pc, 0, kb)
					for i, w := range want {
						gv := got[i]
						if math.Float32bits(gv) != math.Float32bits(w) && !(gv != gv && w != w) {
							t.Fatalf("kind %d kb=%d (asm packed %d): dst[%d] (depth %d, column %d) = %#08x, want %#08x",
								kind, kb, done, i, i/kr.nr, i%kr.nr, math.Float32bits(gv), math.Float32bits(w))
						}
					}
					for i := len(want); i < len(got); i++ {
						if math.Float32bits(got[i]) != math.Float32bits(guard) {
							t.Fatalf("kind %d kb=%d: packer wrote past the panel at %d", kind, kb, i)
						}
					}
				}
			}
		})
	}
}

// TestSetKernel checks the names SetKernel accepts and what Kernel() says.
func TestSetKernel(t *testing.T) {
	prev := chosen.Load()
	defer chosen.Store(prev)
	if err := SetKernel("sse9"); err == nil || !strings.Contains(err.Error(), "avx512, avx2, go") {
		t.Errorf("SetKernel(sse9) = %v, want an error listing the kernels", err)
	}
	if err := SetKernel("go"); err != nil || !strings.HasPrefix(Kernel(), "portable Go float32, 6x16 tile: chosen by SetKernel") {
		t.Errorf("SetKernel(go) = %v, Kernel() = %q", err, Kernel())
	}
	err := SetKernel("AVX512")
	switch {
	case useAVX512 && (err != nil || !strings.HasPrefix(Kernel(), "AVX-512F float32 assembly, 14x32 tile")):
		t.Errorf("SetKernel(AVX512) = %v, Kernel() = %q", err, Kernel())
	case !useAVX512 && (err == nil || !strings.Contains(err.Error(), "needs AVX-512F and AVX512BW")):
		t.Errorf("SetKernel(AVX512) on a CPU without it = %v", err)
	}
	if err := SetKernel("auto"); err != nil || *chosen.Load() != defaultKernel() {
		t.Errorf("SetKernel(auto) = %v, Kernel() = %q", err, Kernel())
	}
	t.Logf("Kernel() = %q; Features() = %v", Kernel(), Features())
	if useAVX512 != (strings.Contains(strings.Join(Features(), " "), "AVX-512F") && strings.Contains(strings.Join(Features(), " "), "AVX512BW")) {
		t.Errorf("Features() = %v disagrees with useAVX512 = %v", Features(), useAVX512)
	}
}

// TestGeneratedAssemblyCurrent: gemm_amd64.s is what gen_amd64.py writes
// today.
func TestGeneratedAssemblyCurrent(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI needs python3 to check the generated assembly")
		}
		t.Skip("python3 not installed: cannot regenerate gemm_amd64.s")
	}
	dst := filepath.Join(t.TempDir(), "gemm_amd64.s")
	if out, err := exec.Command(python, "gen_amd64.py", dst).CombinedOutput(); err != nil {
		t.Fatalf("gen_amd64.py: %v\n%s", err, out)
	}
	want, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("gemm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("gemm_amd64.s differs from gen_amd64.py's output: run python3 gen_amd64.py")
	}
}
