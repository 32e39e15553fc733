//go:build amd64 && !purego

package gemm

import (
	"errors"
	"fmt"

	"golang.org/x/sys/cpu"
)

var (
	bf16AMXImpl    = &bf16Impl{name: "AMX-BF16 tiles", mr: 32, tiledA: true, kern: amxBF16, strip: amxBF16Strip}
	bf16AVX512Impl = &bf16Impl{name: "AVX512_BF16 VDPBF16PS", mr: 12, kern: avx512BF16}
)

// bf16AMX returns the AMX kernel, or why this CPU or system cannot run it.
// The CPUID bits are not enough: the operating system must grant the tile
// data state (amxPermit), which is the real gate.
func bf16AMX() (*bf16Impl, error) {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 {
		return nil, errors.New("this CPU lacks AMX-BF16")
	}
	if err := amxPermit(); err != nil {
		return nil, fmt.Errorf("the CPU has AMX-BF16 but the tile state is not available: %w", err)
	}
	return bf16AMXImpl, nil
}

// bf16AVX512 returns the AVX512_BF16 kernel, or why this CPU cannot run it.
// (cpu.X86.HasAVX512* are false when the OS does not save the zmm state.)
func bf16AVX512() (*bf16Impl, error) {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BF16 {
		return nil, errors.New("this CPU lacks AVX512_BF16")
	}
	return bf16AVX512Impl, nil
}

// bf16Missing describes a CPU with neither bf16 kernel.
func bf16Missing() error {
	has := "no AVX2"
	switch {
	case cpu.X86.HasAVX512F:
		has = "AVX-512F without AVX512_BF16"
	case cpu.X86.HasAVX2:
		has = "AVX2 only"
	}
	if cpu.X86.HasAMXBF16 {
		_, err := bf16AMX()
		return fmt.Errorf("bf16 needs AVX512_BF16 or AMX-BF16: %w", err)
	}
	return fmt.Errorf("bf16 needs AVX512_BF16 or AMX-BF16; this CPU has neither (%s)", has)
}

// roundBF16Slice stores RoundBF16 of each src element in dst (as long).
func roundBF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	done := 0
	if cpu.X86.HasAVX512F && len(src) >= 32 {
		done = len(src) &^ 31
		roundBF16AVX512(&dst[0], &src[0], done, 64)
	}
	for i := done; i < len(src); i++ {
		dst[i] = RoundBF16(src[i])
	}
}

// roundBF16Tiled stores RoundBF16 of src[q] in dst[q/32·512 + q%32]: one
// row of AMX A tiles (tiles of 16 rows of 32, 512 elements apart).
func roundBF16Tiled(dst []uint16, src []float32) {
	done := 0
	if n := len(src); cpu.X86.HasAVX512F && n >= 32 {
		done = n &^ 31
		_ = dst[(done-32)*16+31] // the last tile row the assembly writes
		roundBF16AVX512(&dst[0], &src[0], done, 1024)
	}
	for q := done; q < len(src); q++ {
		dst[q/32*512+q%32] = RoundBF16(src[q])
	}
}

// amxBF16 is a bf16KernelFunc with mr = 32 on AMX tiles: one block.
func amxBF16(cfg *byte, a *uint16, lda int, b *uint16, ldp int, k int, c *float32, ldc int, init *float32, ldi int) {
	amxBF16Strip(cfg, a, lda, b, ldp, k, c, ldc, init, ldi, 1)
}

// amxBF16Strip is a bf16StripFunc with mr = 32 on AMX tiles.
//
//go:noescape
func amxBF16Strip(cfg *byte, a *uint16, lda int, b *uint16, ldp int, k int, c *float32, ldc int, init *float32, ldi int, nb int)

// avx512BF16 is a bf16KernelFunc with mr = 12 on VDPBF16PS.
//
//go:noescape
func avx512BF16(cfg *byte, a *uint16, lda int, b *uint16, ldp int, k int, c *float32, ldc int, init *float32, ldi int)

// roundBF16AVX512 is RoundBF16 over n float32 (a multiple of 32), each 32
// results (64 bytes) dstep bytes after the previous 32.
//
//go:noescape
func roundBF16AVX512(dst *uint16, src *float32, n int, dstep int)

// probeVDPBF16PS runs n iterations of 24 independent VDPBF16PS (benchmarks).
//
//go:noescape
func probeVDPBF16PS(n int)
