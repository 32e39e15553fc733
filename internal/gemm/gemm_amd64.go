//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// The AVX2 assembly needs AVX2 and FMA (and F16C to widen binary16 while
// packing); the AVX-512 assembly needs AVX-512F and AVX512BW (VPMOVZXWD on
// zmm widens bfloat16). x/sys/cpu reports a feature only when the OS also
// saves its registers. Variables, not constants, so the tests can exercise
// every path on one machine.
var (
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useF16C   = cpu.X86.HasAVX2 && cpu.X86.HasF16C
	useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
)

// avx2Kernel is the [6, 16] AVX2/FMA kernel with its 8-deep packers.
var avx2Kernel = &microKernel{
	name: "avx2", impl: implAVX2, mr: mr, nr: nr, kc: kcAVX2, kcPad: kcAVX2 + 16, mc: mcAVX2, nc: ncBlock,
	aWays: aWaysAVX2, packPays: true,
}

// avx512Kernel is the [14, 32] AVX-512F kernel with its 16-deep packers.
var avx512Kernel = &microKernel{
	name: "avx512", impl: implAVX512, mr: mr512, nr: nr512, kc: kc512, kcPad: kc512 + 16, mc: mc512, nc: nc512,
	aWays: 5, packPays: true,
}

// Accelerated reports whether products run on an assembly micro-kernel
// (false on CPUs without AVX2 and FMA, or after SetKernel("go")).
func Accelerated() bool { return currentKernel().kr != goKernel }

// kernels lists the kernels of this build, best first, with what each
// needs of the CPU and whether it has it.
func kernels() []kernelOption {
	return []kernelOption{
		{avx512Kernel, "AVX-512F and AVX512BW", useAVX512},
		{avx2Kernel, "AVX2 and FMA", useAVX2},
		{goKernel, "", true},
	}
}

// defaultKernel picks the kernel for this CPU without measuring and says
// why: what products run on until Choose has measured the kernels, and the
// incumbent Choose keeps unless another is more than 5% faster.
//
// AVX-512 is the default on Intel (Sapphire Rapids: two 512-bit FMA pipes,
// twice the AVX2 peak). AMD's Zen 4 executes 512-bit FMAs as two 256-bit
// halves, so AVX-512 has about the AVX2 peak there, while Zen 5 has
// full-width units (1.7x on the model there): only a measurement tells,
// so AMD (and any other vendor) starts from AVX2.
func defaultKernel() kernelChoice {
	c := describeCPU()
	switch {
	case useAVX512 && c.vendor == "GenuineIntel":
		return kernelChoice{avx512Kernel, "default on Intel with AVX-512 (" + c.name + ")"}
	case useAVX512 && useAVX2:
		return kernelChoice{avx2Kernel, "AVX-512 is not the default on " + c.name +
			" without a measurement (Choose, or SetKernel(\"avx512\"))"}
	case useAVX2:
		return kernelChoice{avx2Kernel, "CPU lacks AVX-512F or AVX512BW (" + c.name + ")"}
	}
	return kernelChoice{goKernel, "CPU lacks AVX2 or FMA (" + c.name + ")"}
}

// Features lists the SIMD features of this CPU that the kernels care about,
// as the OS reports them usable (for `clipidx info`). The AVX-512
// extensions count only with AVX-512F, which they need: GODEBUG can turn
// off avx512f alone (GODEBUG=cpu.avx512f=off), and knows no avx512bf16.
func Features() []string {
	var f []string
	f512 := cpu.X86.HasAVX512F
	for _, x := range []struct {
		name string
		has  bool
	}{
		{"AVX2", cpu.X86.HasAVX2}, {"FMA", cpu.X86.HasFMA}, {"F16C", cpu.X86.HasF16C},
		{"AVX-512F", f512}, {"AVX512BW", f512 && cpu.X86.HasAVX512BW},
		{"AVX512VL", f512 && cpu.X86.HasAVX512VL}, {"AVX512_BF16", f512 && cpu.X86.HasAVX512BF16},
		{"AMX-TILE", cpu.X86.HasAMXTile}, {"AMX-BF16", cpu.X86.HasAMXBF16},
	} {
		if x.has {
			f = append(f, x.name)
		}
	}
	return f
}

// runKernel runs kernel kr's micro-kernel (kernelGo's contract, kr's tile).
func runKernel(kr *microKernel, k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	switch kr.impl {
	case implAVX512:
		kernelAVX512(k, a, lda, b, c, ldc, alpha, bias, accum)
	case implAVX2:
		kernelAVX2(k, a, lda, b, c, ldc, alpha, bias, accum)
	default:
		kernelGo(k, a, lda, b, c, ldc, alpha, bias, accum)
	}
}

// runKernelHalf computes the left half (nr/2 columns) of kr's tile,
// C = alpha·A·B, when kr has a half-width kernel, and reports whether it
// did: edge panels of at most nr/2 columns then cost half.
func runKernelHalf(kr *microKernel, k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32) bool {
	if kr.impl != implAVX512 {
		return false
	}
	kernelAVX512Half(k, a, lda, b, c, ldc, alpha)
	return true
}

// packKernelT packs depths [pc, pc+d) of a full transposed panel of kr.nr
// columns starting at row j0 of B with kr's assembly packer, for the
// largest d ≤ kb it handles in whole groups, and returns d (the driver
// packs the rest in Go).
func packKernelT(kr *microKernel, dst []float32, g *gemmArgs, j0, pc, kb int) int {
	switch kr.impl {
	case implAVX512:
		return packTAVX512(dst, g, j0, pc, kb)
	case implAVX2:
		return packTAVX2(dst, g, j0, pc, kb)
	}
	return 0
}

// kernelAVX2 is kernelGo (same contract) with the [mr, nr] = [6, 16] tile of
// C in Y0–Y11.
//
//go:noescape
func kernelAVX2(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool)

// kernelAVX512 is kernelGo (same contract) with the [mr512, nr512] =
// [14, 32] tile of C in Z0–Z27.
//
//go:noescape
func kernelAVX512(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool)

// kernelAVX512Half computes C[14, 16] = alpha·A·B[:, :16] from a packed
// 32-wide panel: the edge panels of at most 16 columns.
//
//go:noescape
func kernelAVX512Half(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32)

// packT16F32 packs groups·8 columns of 16 rows of a row-major float32 matrix
// (stride ldb elements) transposed into dst[p·16+j], 8×8 blocks at a time.
//
//go:noescape
func packT16F32(dst *float32, src *float32, ldb int, groups int)

// packT16F16 is packT16F32 for binary16 sources, widened with VCVTPH2PS.
//
//go:noescape
func packT16F16(dst *float32, src *uint16, ldb int, groups int)

// packT16BF16 is packT16F32 for bfloat16 sources (zero-extend, shift by 16).
//
//go:noescape
func packT16BF16(dst *float32, src *uint16, ldb int, groups int)

// packT32F32 packs groups·16 columns of 32 rows of a row-major float32
// matrix (stride ldb elements) transposed into dst[p·32+j], 16×16 blocks
// at a time in zmm registers.
//
//go:noescape
func packT32F32(dst *float32, src *float32, ldb int, groups int)

// packT32F16 is packT32F32 for binary16 sources, widened with VCVTPH2PS
// (exact; subnormals included, NaNs come out quiet).
//
//go:noescape
func packT32F16(dst *float32, src *uint16, ldb int, groups int)

// packT32BF16 is packT32F32 for bfloat16 sources (VPMOVZXWD, shift by 16).
//
//go:noescape
func packT32BF16(dst *float32, src *uint16, ldb int, groups int)

// cpuid executes CPUID with the given leaf and subleaf.
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// packTAVX2 packs whole groups of 8 depths of a 16-column panel.
func packTAVX2(dst []float32, g *gemmArgs, j0, pc, kb int) int {
	groups := kb / 8
	if groups == 0 {
		return 0
	}
	off := j0*g.ldb + pc
	switch g.kind {
	case bF32T:
		packT16F32(&dst[0], &g.b32[off], g.ldb, groups)
	case bF16T:
		if !useF16C {
			return 0
		}
		packT16F16(&dst[0], &g.b16[off], g.ldb, groups)
	case bBF16T:
		packT16BF16(&dst[0], &g.b16[off], g.ldb, groups)
	default:
		return 0
	}
	return groups * 8
}

// packTAVX512 packs whole groups of 16 depths of a 32-column panel.
func packTAVX512(dst []float32, g *gemmArgs, j0, pc, kb int) int {
	groups := kb / 16
	if groups == 0 {
		return 0
	}
	off := j0*g.ldb + pc
	switch g.kind {
	case bF32T:
		packT32F32(&dst[0], &g.b32[off], g.ldb, groups)
	case bF16T:
		packT32F16(&dst[0], &g.b16[off], g.ldb, groups)
	case bBF16T:
		packT32BF16(&dst[0], &g.b16[off], g.ldb, groups)
	default:
		return 0
	}
	return groups * 16
}

// cpuInfo is what Kernel() says about the processor.
type cpuInfo struct {
	vendor string // CPUID vendor, e.g. "GenuineIntel", "AuthenticAMD"
	name   string // e.g. "Intel family 6 model 0x8f (Sapphire Rapids): Intel(R) Xeon(R) Processor"
}

// describeCPU reads the vendor, family, model and brand string by CPUID.
func describeCPU() cpuInfo {
	maxLeaf, b, c, d := cpuid(0, 0)
	vendor := string(le32(b)) + string(le32(d)) + string(le32(c))
	var family, model uint32
	if maxLeaf >= 1 {
		a, _, _, _ := cpuid(1, 0)
		family, model = a>>8&0xf, a>>4&0xf
		if family == 0xf {
			family += a >> 20 & 0xff
		}
		if family == 6 || family >= 0xf {
			model |= (a >> 16 & 0xf) << 4
		}
	}
	short := map[string]string{"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}[vendor]
	if short == "" {
		short = vendor
	}
	name := sprintf("%s family %#x model %#x", short, family, model)
	if u := microarch(vendor, family, model); u != "" {
		name += " (" + u + ")"
	}
	if brand := brandString(); brand != "" {
		name += ": " + brand
	}
	return cpuInfo{vendor: vendor, name: name}
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// brandString returns the processor brand string (CPUID 0x80000002–4),
// trimmed, or "".
func brandString() string {
	if ext, _, _, _ := cpuid(0x80000000, 0); ext < 0x80000004 {
		return ""
	}
	var s []byte
	for leaf := uint32(0x80000002); leaf <= 0x80000004; leaf++ {
		a, b, c, d := cpuid(leaf, 0)
		for _, v := range []uint32{a, b, c, d} {
			s = append(s, le32(v)...)
		}
	}
	return trimBrand(s)
}

// microarch names the few server microarchitectures the kernel choice is
// about, or "".
func microarch(vendor string, family, model uint32) string {
	switch {
	case vendor == "GenuineIntel" && family == 6:
		return map[uint32]string{
			0x55: "Skylake-SP/Cascade Lake", 0x6a: "Ice Lake-SP", 0x6c: "Ice Lake-D",
			0x8f: "Sapphire Rapids", 0xcf: "Emerald Rapids", 0xad: "Granite Rapids",
			0xae: "Granite Rapids-D",
		}[model]
	case vendor == "AuthenticAMD" && family == 0x19:
		if model>>4 == 1 || model>>4 >= 6 && model>>4 <= 7 || model>>4 == 0xa {
			return "Zen 4"
		}
		return "Zen 3"
	case vendor == "AuthenticAMD" && family == 0x1a:
		return "Zen 5"
	}
	return ""
}
