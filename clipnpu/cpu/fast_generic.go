//go:build !amd64 || purego

package cpu

// fastGELU is the exact GELU in place (plain Go on this platform).
func fastGELU(x []float32) { fastGELUGo(x) }
