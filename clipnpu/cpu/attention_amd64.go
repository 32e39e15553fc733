//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// attnAVX512 selects softmaxExpAVX512 (AVX-512F: masked loads and stores,
// VRNDSCALEPS, VSCALEFPS).
var attnAVX512 = cpu.X86.HasAVX512F

// softmaxExpAVX512 is softmaxExpGo on x[0:n], n ≥ 1, sixteen lanes at a time
// with Cephes' expf polynomial.
//
//go:noescape
func softmaxExpAVX512(x *float32, n int) float32

// softmaxConsts are the constants softmaxExpAVX512 broadcasts, in this
// order: log2(e); ln 2 as C1 + C2; P0–P5 of e^r ≈ 1 + r + r²·P(r); 1; the
// lower clamp of the exponent's argument.
var softmaxConsts = [...]float32{
	1.44269504088896341,
	0.693359375, -2.12194440e-4,
	1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
	1, -87,
}

// softmaxExp replaces row by exp(row - max(row)) and returns its sum, the
// softmax before its division; row is not empty.
func softmaxExp(row []float32) float32 {
	if attnAVX512 {
		return softmaxExpAVX512(&row[0], len(row))
	}
	return softmaxExpGo(row)
}

// prefetchRows asks for lines cache lines from each of rows rows of stride
// ld floats at p to be brought into L2.
//
//go:noescape
func prefetchRows(p *float32, rows, ld, lines int)

// prefetchHead asks for the cache lines of x's first rows rows, d floats
// each with row stride ld, to be brought into L2: the next head's values,
// while this one computes.
func prefetchHead(x []float32, rows, ld, d int) {
	if len(x) > 0 {
		prefetchRows(&x[0], rows, ld, (4*d+63)/64+1)
	}
}
