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
	bs := unsafe.Slice(b, k*nr)
	var acc [mr][nr]float32
	for p := 0; p < k; p++ {
		bp := (*[nr]float32)(bs[p*nr : p*nr+nr])
		for i := range mr {
			ai := as[i*lda+p]
			r := &acc[i]
			for j := range nr {
				r[j] += ai * bp[j]
			}
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
