package npu

import (
	"fmt"
	"math" // The flm.GEMM weight format on NPU2 (amd/IRON iron/operators/flm/
	// packing.py, read not copied): B [K, N] reordered into the order the compute
	// tiles consume it, then quantised to bfp16ebs8 — blocks of 8 values (8
	// consecutive k of one column n) sharing the largest float32 exponent of the
	// block, one exponent byte then 8 signed 8-bit mantissas, 9 bytes per 8
	// values, rounded to nearest even like the cores' conv_even mode.
	//
	// The reorder: with tiles (tileK, tileN), the mmul's s = t = 8 and the
	// per-core k slice ctK, B[k][n] with
	//
	//	k = kb·tileK + ks·ctK + i·8 + sIn,  n = cb·tileN + tb·8 + tIn
	//
	// lands at block-major position (cb, kb, ks, tb, i, tIn, sIn).

	"github.com/clipidx/clipidx/clipnpu/core"
)

// bfpBlock is the bfp16ebs8 block length and byte size.
const (
	bfpBlock      = 8
	bfpBlockBytes = 9
	mmulS, mmulT  = 8, 8
)

// packLayout is one GEMM's B tiling.
type packLayout struct {
	K, N, tileK, tileN, ctK int
}

func (l packLayout) check() error {
	switch {
	case l.K <= 0 || l.N <= 0 || l.tileK <= 0 || l.tileN <= 0 || l.ctK <= 0:
		return fmt.Errorf("packed B: non-positive size in %+v", l)
	case l.K%l.tileK != 0 || l.N%l.tileN != 0:
		return fmt.Errorf("packed B: [%d, %d] does not tile to (%d, %d)", l.K, l.N, l.tileK, l.tileN)
	case l.tileK%l.ctK != 0 || l.ctK%mmulS != 0 || l.tileN%mmulT != 0:
		return fmt.Errorf("packed B: tiles (%d, %d, ct_k %d) do not split into 8x8 mmul blocks", l.tileK, l.tileN, l.ctK)
	}
	return nil
}

// bytes is the packed size of B.
func (l packLayout) bytes() int { return l.K * l.N / bfpBlock * bfpBlockBytes }

// order calls fn(k, n, pos) for every element of B, pos being its index in
// the reordered stream.
func (l packLayout) order(fn func(k, n, pos int)) {
	KB, KS, I := l.K/l.tileK, l.tileK/l.ctK, l.ctK/mmulS
	CB, TB := l.N/l.tileN, l.tileN/mmulT
	pos := 0
	for cb := 0; cb < CB; cb++ {
		for kb := 0; kb < KB; kb++ {
			for ks := 0; ks < KS; ks++ {
				for tb := 0; tb < TB; tb++ {
					for i := 0; i < I; i++ {
						for tIn := 0; tIn < mmulT; tIn++ {
							n := cb*l.tileN + tb*mmulT + tIn
							k0 := kb*l.tileK + ks*l.ctK + i*mmulS
							for sIn := 0; sIn < mmulS; sIn++ {
								fn(k0+sIn, n, pos)
								pos++
							}
						}
					}
				}
			}
		}
	}
}

// packB reorders and quantises b [K, N] (row-major) into bfp16ebs8.
func packB(b []float32, l packLayout) ([]byte, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(b) != l.K*l.N {
		return nil, fmt.Errorf("packed B: %d values for [%d, %d]", len(b), l.K, l.N)
	}
	flat := make([]float32, len(b))
	l.order(func(k, n, pos int) { flat[pos] = b[k*l.N+n] })
	out := make([]byte, l.bytes())
	for i := 0; i < len(flat)/bfpBlock; i++ {
		encodeBFP(out[i*bfpBlockBytes:(i+1)*bfpBlockBytes], flat[i*bfpBlock:(i+1)*bfpBlock])
	}
	return out, nil
}

// unpackB decodes packed bfp16ebs8 back to b [K, N] float32 (exactly the
// values the cores multiply with).
func unpackB(p []byte, l packLayout) ([]float32, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(p) < l.bytes() {
		return nil, fmt.Errorf("packed B: %d bytes, [%d, %d] needs %d", len(p), l.K, l.N, l.bytes())
	}
	flat := make([]float32, l.K*l.N)
	for i := 0; i < len(flat)/bfpBlock; i++ {
		decodeBFP(flat[i*bfpBlock:(i+1)*bfpBlock], p[i*bfpBlockBytes:(i+1)*bfpBlockBytes])
	}
	b := make([]float32, l.K*l.N)
	l.order(func(k, n, pos int) { b[k*l.N+n] = flat[pos] })
	return b, nil
}

// encodeBFP quantises 8 float32 into one block (9 bytes): the largest
// biased exponent, then per value its 24-bit magnitude (implicit bit
// explicit) shifted right by 17 + (maxExp − exp), rounded to nearest even,
// saturated to int8.
func encodeBFP(dst []byte, v []float32) {
	var exps [bfpBlock]int
	maxExp := 0
	for i, x := range v {
		exps[i] = int(math.Float32bits(x)>>23) & 0xFF
		maxExp = max(maxExp, exps[i])
	}
	dst[0] = byte(maxExp)
	for i, x := range v {
		u := math.Float32bits(x)
		man := int64(u & 0x7FFFFF)
		if exps[i] != 0 {
			man |= 0x800000
		}
		neg := u&0x80000000 != 0
		if neg {
			man = -man
		}
		shift := maxExp - exps[i]
		var q int64
		if shift >= 32 {
			if neg {
				q = -1
			}
		} else {
			total := min(17+shift, 62)
			q = int64(math.RoundToEven(float64(man) / math.Exp2(float64(total))))
		}
		q = max(-128, min(127, q))
		dst[1+i] = byte(int8(q))
	}
}

// decodeBFP expands one block: value = mantissa · 2^(exp − 133).
func decodeBFP(dst []float32, src []byte) {
	scale := math.Exp2(float64(int(src[0]) - 133))
	for i := range dst {
		dst[i] = float32(float64(int8(src[1+i])) * scale)
	}
}

// bfpScale[e] is 2^(e − 133) as a float32, the weight of mantissa 1 under
// shared exponent byte e (subnormal below e = 7, exact throughout).
var bfpScale = func() (s [256]float32) {
	for e := range s {
		s[e] = float32(math.Ldexp(1, e-133))
	}
	return s
}()

// decodeBT decodes packed bfp16ebs8 B [K, N] into w [N, K] as bf16 bit
// patterns: Bᵀ, the nn.Linear layout gemm.Matrix multiplies with. Every
// bfp16ebs8 value is an int8 times 2^(e−133), which bf16 holds exactly (8
// significant bits; its subnormals reach 2^−133), so nothing is rounded and
// w carries exactly the values unpackB gives, in 2 bytes each instead of 4.
// Each block (8 consecutive k of one column) lands contiguously in w.
// Column tiles are decoded on up to threads goroutines.
func decodeBT(w []uint16, p []byte, l packLayout, threads int) error {
	if err := l.check(); err != nil {
		return err
	}
	if len(p) < l.bytes() {
		return fmt.Errorf("packed B: %d bytes, [%d, %d] needs %d", len(p), l.K, l.N, l.bytes())
	}
	if len(w) != l.K*l.N {
		return fmt.Errorf("packed B: %d outputs for [%d, %d]", len(w), l.K, l.N)
	}
	KB, KS, I := l.K/l.tileK, l.tileK/l.ctK, l.ctK/mmulS
	CB, TB := l.N/l.tileN, l.tileN/mmulT
	perCB := l.K * l.tileN / bfpBlock // blocks in one column tile
	core.Parallel(CB, threads, func(lo, hi int) {
		for cb := lo; cb < hi; cb++ {
			blk := p[cb*perCB*bfpBlockBytes:]
			for kb := 0; kb < KB; kb++ {
				for ks := 0; ks < KS; ks++ {
					for tb := 0; tb < TB; tb++ {
						for i := 0; i < I; i++ {
							k0 := kb*l.tileK + ks*l.ctK + i*mmulS
							for tIn := 0; tIn < mmulT; tIn++ {
								n := cb*l.tileN + tb*mmulT + tIn
								scale := bfpScale[blk[0]]
								dst := w[n*l.K+k0 : n*l.K+k0+mmulS]
								for s := range dst {
									dst[s] = uint16(math.Float32bits(float32(int8(blk[1+s]))*scale) >> 16)
								}
								blk = blk[bfpBlockBytes:]
							}
						}
					}
				}
			}
		}
	})
	return nil
}
