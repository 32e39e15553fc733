package gemm

// SgemmRef is the plain-loop oracle of MatMul: c[m,n] = alpha·a[m,k]·B with
// B = b[k,n], or bᵀ for b [n,k] when transB. It accumulates in float64, so
// tests can bound the error of the fast kernels against it. It lives in an
// untagged file (not gemm_generic.go) because the amd64 tests need it.
func SgemmRef(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, transB bool, alpha float32) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var bv float32
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(a[i*lda+p]) * float64(bv)
			}
			c[i*ldc+j] = float32(float64(alpha) * s)
		}
	}
}

// LinearRef is the plain-loop oracle of Pool.Linear: y[m, w.Rows] =
// x[m, w.Cols]·wᵀ + bias, accumulated in float64.
func LinearRef(y, x []float32, m int, w *Matrix, bias []float32) {
	n, k := w.Rows, w.Cols
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var wv float32
				switch w.Dtype {
				case F32:
					wv = w.F32[j*k+p]
				case F16:
					wv = F16ToF32(w.U16[j*k+p])
				case BF16:
					wv = BF16ToF32(w.U16[j*k+p])
				}
				s += float64(x[i*k+p]) * float64(wv)
			}
			if bias != nil {
				s += float64(bias[j])
			}
			y[i*n+j] = float32(s)
		}
	}
}
