//go:build amd64 && !purego

package gemm

import "testing"

// TestFMAPeakLoops checks that each FMA peak loop this CPU can run does
// its multiply-adds: n iterations leave 2n in every lane of every
// accumulator, and the loops return the first plus the last (4n).
func TestFMAPeakLoops(t *testing.T) {
	loops := []struct {
		name string
		ok   bool
		fn   func(int) float32
	}{{"avx512", useAVX512, fmaPeakAVX512}, {"avx2", useAVX2, fmaPeakAVX2}}
	for _, l := range loops {
		if !l.ok {
			t.Logf("%s: not run, this CPU lacks it", l.name)
			continue
		}
		for _, n := range []int{1, 7, 1000} {
			if got := l.fn(n); got != float32(4*n) {
				t.Errorf("%s loop of %d iterations returned %v, want %d", l.name, n, got, 4*n)
			}
		}
	}
}
