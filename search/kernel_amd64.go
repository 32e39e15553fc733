//go:build amd64 && !purego

package search

import "golang.org/x/sys/cpu"

// What this CPU can run. Variables, not constants, so that the tests can
// run every kernel the CPU has on one machine.
var (
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
	useBF16   = useAVX512 && cpu.X86.HasAVX512BF16
)

// kernel is the scan kernel new queries use.
var kernel = defaultKernel()

// defaultKernel is the fastest kernel this CPU has. That is not the
// VDPBF16PS one: it scans an index too large for the caches no faster
// than the AVX-512 kernel (both run at the memory's speed), a cached one
// slower (BenchmarkScoreRows on Intel Xeon (Emerald Rapids, family 6
// model 0xcf), 2 vCPUs, 3 runs of 3: 13.1-15.5 µs a chunk against
// 6.9-9.5), and it carries the query to 16 bits only. It stays, tested,
// for CPUs where it may win and for the benchmarks.
func defaultKernel() kernelKind {
	ks := kernels()
	k := ks[len(ks)-1]
	if k == kernelBF16 {
		k = kernelAVX512
	}
	return k
}

// kernels lists the kernels this CPU can run, slowest first.
func kernels() []kernelKind {
	ks := []kernelKind{kernelGo}
	if useAVX2 {
		ks = append(ks, kernelAVX2)
	}
	if useAVX512 {
		ks = append(ks, kernelAVX512)
	}
	if useBF16 {
		ks = append(ks, kernelBF16)
	}
	return ks
}

// dotHiAVX2 is dotHiGeneric for n a multiple of 8 (kernel_amd64.s).
//
//go:noescape
func dotHiAVX2(hi *byte, q *float32, n int) float32

// dotHiRowsAVX2 sets out[r] to the score of the first n &^ 31 elements of
// rows vectors of n bfloat16 values back to back at hi, qp being the query
// as permuteQuery16 lays it out (kernel_amd64.s).
//
//go:noescape
func dotHiRowsAVX2(hi *byte, qp *float32, n, rows int, out *float32)

// dotHiRowsAVX512 sets out[r] for rows vectors of n ≥ 1 bfloat16 values
// back to back at hi, qp being the query as permuteQuery lays it out
// (kernel_amd64.s).
//
//go:noescape
func dotHiRowsAVX512(hi *byte, qp *float32, n, rows int, out *float32)

// dotHiRowsBF16 is dotHiRowsAVX512 with VDPBF16PS on the query halves of
// splitBF16 (kernel_amd64.s).
//
//go:noescape
func dotHiRowsBF16(hi *byte, qh, ql *uint16, n, rows int, out *float32)

// dotHi is Σ q[i]·hi[i] over len(q) bfloat16 values in hi, with the
// current kernel.
func dotHi(hi []byte, q []float32) float32 {
	if kernel >= kernelAVX512 && len(q) > 0 {
		var s [1]float32
		newHiQuery(q).scoreRows(hi, s[:])
		return s[0]
	}
	return dotHiOne(hi, q, kernel)
}

// dotHiOne is one row with the Go or AVX2 kernel.
func dotHiOne(hi []byte, q []float32, k kernelKind) float32 {
	n := len(q)
	hi = hi[:2*n]
	if k != kernelAVX2 || n < 8 {
		return dotHiGeneric(hi, q)
	}
	m := n &^ 7
	s := dotHiAVX2(&hi[0], &q[0], m)
	if m < n {
		s += dotHiGeneric(hi[2*m:], q[m:])
	}
	return s
}

// scoreRows sets out[r] to the score of row r of hi: len(out) vectors of
// len(h.q) bfloat16 values back to back.
func (h *hiQuery) scoreRows(hi []byte, out []float32) {
	n := len(h.q)
	hi = hi[:len(out)*2*n] // the bounds check the assembly relies on
	if n == 0 || len(out) == 0 {
		clear(out)
		return
	}
	switch h.kernel {
	case kernelBF16:
		dotHiRowsBF16(&hi[0], &h.qh[0], &h.ql[0], n, len(out), &out[0])
	case kernelAVX512:
		dotHiRowsAVX512(&hi[0], &h.qp[0], n, len(out), &out[0])
	case kernelAVX2:
		m := n &^ 31
		if m == 0 {
			clear(out)
		} else {
			dotHiRowsAVX2(&hi[0], &h.qp[0], n, len(out), &out[0])
		}
		if m < n {
			for r := range out {
				out[r] += dotHiGeneric(hi[r*2*n+2*m:(r+1)*2*n], h.q[m:])
			}
		}
	default:
		for r := range out {
			out[r] = dotHiOne(hi[r*2*n:(r+1)*2*n], h.q, h.kernel)
		}
	}
}
