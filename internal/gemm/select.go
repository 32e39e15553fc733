package gemm

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// ErrKernelUnavailable is returned by SetKernel when the named kernel is not
// built into this binary or the CPU lacks the features it needs.
var ErrKernelUnavailable = errors.New("gemm kernel not available")

// kernelOption is one kernel of this build: what it needs of the CPU and
// whether the CPU (and OS) has it.
type kernelOption struct {
	kr    *microKernel
	needs string // e.g. "AVX-512F and AVX512BW"; "" for the Go kernel
	ok    bool
}

// kernelChoice is the kernel products run on and why it was chosen.
type kernelChoice struct {
	kr  *microKernel
	why string
}

var chosen atomic.Pointer[kernelChoice]

func init() {
	c := defaultKernel()
	chosen.Store(&c)
}

// currentKernel returns the kernel new products start on.
func currentKernel() *kernelChoice { return chosen.Load() }

// SetKernel chooses the float32 micro-kernel by name: "avx512", "avx2" or
// "go" on amd64, "neon" or "go" on arm64, "go" elsewhere; "" or "auto"
// restores the default for this CPU. It returns an error wrapping
// ErrKernelUnavailable when the CPU lacks what the kernel needs (naming
// the missing feature), and leaves the choice unchanged then. It is meant
// for start-up (cmd/clipidx maps CLIPIDX_GEMM_KERNEL to it); products
// already running finish on the kernel they started with.
func SetKernel(name string) error {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == "auto" {
		c := defaultKernel()
		chosen.Store(&c)
		return nil
	}
	var names []string
	for _, o := range kernels() {
		names = append(names, o.kr.name)
		if o.kr.name != name {
			continue
		}
		if !o.ok {
			return fmt.Errorf("gemm kernel %q needs %s, which this CPU lacks (it has: %s): %w",
				name, o.needs, strings.Join(featuresOrNone(), ", "), ErrKernelUnavailable)
		}
		chosen.Store(&kernelChoice{o.kr, "chosen by SetKernel"})
		return nil
	}
	return fmt.Errorf("gemm kernel %q is not built into this binary (choose one of %s, or auto): %w",
		name, strings.Join(names, ", "), ErrKernelUnavailable)
}

// Kernel names the micro-kernel float32 products run on, its tile, and why
// it was chosen.
func Kernel() string {
	c := currentKernel()
	return fmt.Sprintf("%s, %dx%d tile: %s", kernelTitle(c.kr), c.kr.mr, c.kr.nr, c.why)
}

func kernelTitle(kr *microKernel) string {
	switch kr.name {
	case "avx512":
		return "AVX-512F float32 assembly"
	case "avx2":
		return "AVX2 + FMA float32 assembly"
	case "neon":
		return "NEON float32 assembly (verified under emulation, not measured on arm64 hardware)"
	}
	return "portable Go float32"
}

func featuresOrNone() []string {
	if f := Features(); len(f) > 0 {
		return f
	}
	return []string{"none of the SIMD features the kernels use"}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// trimBrand turns a NUL-padded CPUID brand string into text.
func trimBrand(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
