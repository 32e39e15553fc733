package gemm

import "unsafe"

// kernelGo is the portable micro-kernel: with acc the [mr, nr] product of
// a (mr rows, stride lda, k columns) and the packed panel b ([k][nr]),
//
//	accum:        C += alpha·acc
//	bias != nil:  C  = bias + alpha·acc   (bias has nr elements)
//	otherwise:    C  = alpha·acc
//
// C is mr rows of nr floats with stride ldc. The assembly kernel has the same
// contract.
func kernelGo(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	as := unsafe.Slice(a, (mr-1)*lda+k)
	var acc [mr][nr]float32
	// Blocks of [2, 4] in scalar accumulators, which the compiler keeps in
	// registers (an array accumulator would live in memory).
	for i := 0; i < mr; i += 2 {
		a0 := as[i*lda : i*lda+k]
		a1 := as[(i+1)*lda : (i+1)*lda+k]
		a1 = a1[:len(a0)]
		for j := 0; j < nr; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			for p, x0 := range a0 {
				x1 := a1[p]
				// In bounds: p < k and j+4 ≤ nr; unchecked to keep the loop tight.
				bp := (*[4]float32)(unsafe.Add(unsafe.Pointer(b), (p*nr+j)*4))
				b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
				c00 += x0 * b0
				c01 += x0 * b1
				c02 += x0 * b2
				c03 += x0 * b3
				c10 += x1 * b0
				c11 += x1 * b1
				c12 += x1 * b2
				c13 += x1 * b3
			}
			acc[i][j], acc[i][j+1], acc[i][j+2], acc[i][j+3] = c00, c01, c02, c03
			acc[i+1][j], acc[i+1][j+1], acc[i+1][j+2], acc[i+1][j+3] = c10, c11, c12, c13
		}
	}
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	var bv []float32
	if bias != nil {
		bv = unsafe.Slice(bias, nr)
	}
	for i := range mr {
		row := cs[i*ldc : i*ldc+nr]
		for j := range nr {
			v := alpha * acc[i][j]
			switch {
			case accum:
				row[j] += v
			case bv != nil:
				row[j] = bv[j] + v
			default:
				row[j] = v
			}
		}
	}
}
