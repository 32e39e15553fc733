package cpu

// Attention of one (sequence, head) pair on one worker, the body of
// fastCPU.attention. With L the sequence's tokens and d the head width:
//
//	s [L, L] = scale · q · kᵀ                         (first product)
//	e = exp(s - rowmax), 0 past the row's last key; Σ per row   (softmaxExp)
//	c [L, d] = (e · v) / Σ                           (second product, then a row scale)
//
// The softmax's 1/Σ scales the d values of a context row instead of the L
// values of a score row, and the max, exp and sum run in two passes over
// the row (softmaxExp: AVX-512 assembly where the CPU has it).
//
// fastCPU.attention asks for the next pair's values to be brought into L2
// (prefetchHead) before it starts a pair: the second product packs them
// row by row, 257 rows 15 KB apart for an image, and waited on them (on
// ViT-H/14's image heads 2-4% faster; prefetching the queries and keys as
// well gained no more, and prompts neither gain nor lose).
//
// A causal head runs whole too, upper triangle included. Row blocks that
// skip it (block [r0, r1) needs keys [0, r1) only) measured slower on
// ViT-H/14's prompts (L ≤ 77, d = 64, Emerald Rapids): blocked, the first
// product's narrow key ranges run as edge tiles and each block packs the
// keys or values again, which cost more than the skipped work (blocks of
// 42, 28 or 14 rows: 3%, 13% and 51% slower for L = 77 than whole
// products; blocking only the second product, whose tiles stay whole:
// 3%, 5% and 21% slower).

import (
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/viterin/vek/vek32"
)

// attnMaxRows bounds the heads whose 1/Σ per row are kept on the stack
// and applied to the context; longer ones scale their score rows instead.
const attnMaxRows = 512

// scoreStride is the row stride of a head's [L, L] scores: L rounded up to
// 16 floats, so that each row starts on a 64-byte line and the first
// product's stores and the second's loads of a row never straddle two lines
// (L = 257, ViT-H/14's image heads, against a stride of L: 1-6% faster on
// the default kernel, BenchmarkAttentionNew/image, builds run interleaved;
// 4-9% on one thread of the AVX-512 kernel; AMD Zen 5, 2026-12-03).
func scoreStride(L int) int { return (L + 15) &^ 15 }

// attendHead writes one head's context c [L, d] (row stride ldc) from its
// queries, keys and values q, k, v [L, d] (row stride ld); under the causal
// mask row r sees keys [0, r]. s is scratch of at least L·scoreStride(L)
// values, 64-byte aligned.
func attendHead(w *gemm.Worker, c []float32, ldc int, q, k, v []float32, ld, L, d int, causal bool, scale float32, s []float32) {
	lds := scoreStride(L)
	w.MatMul(s, lds, q, ld, k, ld, L, L, d, true, scale)
	var inv [attnMaxRows]float32
	for r := 0; r < L; r++ {
		row := s[r*lds : r*lds+L]
		if causal {
			clear(row[r+1:])
			row = row[:r+1]
		}
		sum := softmaxExp(row)
		if L <= attnMaxRows {
			inv[r] = 1 / sum
		} else {
			vek32.MulNumber_Inplace(row, 1/sum)
		}
	}
	w.MatMul(c, ldc, s, lds, v, ld, L, d, L, false, 1)
	if L <= attnMaxRows {
		for r := 0; r < L; r++ {
			vek32.MulNumber_Inplace(c[r*ldc:r*ldc+d], inv[r])
		}
	}
}

// softmaxExpGo is softmaxExp in vek's kernels (five passes over the row);
// attention_amd64.s has the two-pass AVX-512 version. vek's eight-lane exp
// returns garbage below about -88 (-1.1e34 for exp(-99)), so the
// arguments stop at -87 as the assembly's do (e^-87 is still normal).
func softmaxExpGo(row []float32) float32 {
	m := vek32.Max(row)
	vek32.AddNumber_Inplace(row, -m)
	vek32.MaximumNumber_Inplace(row, softmaxFloor)
	vek32.Exp_Inplace(row)
	return vek32.Sum(row)
}

// softmaxFloor is where softmaxExp's arguments x - max stop.
const softmaxFloor = -87
