package gemm

import (
	"errors"
	"testing"
)

// useKernel runs the rest of the test on the named kernel (restoring the
// previous choice when it ends), or skips it, naming what the CPU lacks,
// when this CPU or build cannot run it.
func useKernel(t testing.TB, name string) {
	t.Helper()
	prev := chosen.Load()
	if err := SetKernel(name); err != nil {
		if errors.Is(err, ErrKernelUnavailable) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { chosen.Store(prev) })
}
