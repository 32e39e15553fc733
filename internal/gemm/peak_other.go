//go:build !amd64 || purego

package gemm

// fmaPeakLoop: no FMA peak loop in this build (PeakF32 returns 0).
func fmaPeakLoop() (func(n int) float32, float64) { return nil, 0 }
