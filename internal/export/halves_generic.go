//go:build !amd64 || purego

package export

// joinF16 joins n stored halves into little-endian float16 (joinF16Go).
func joinF16(dst, hi, lo []byte, n int) {
	if n > 0 {
		joinF16Go(dst, hi, lo, n)
	}
}
