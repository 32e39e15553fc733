//go:build !amd64 || purego

package cpu

// attnAVX512 is false: no assembly on this platform.
const attnAVX512 = false

// softmaxExp replaces row by exp(row - max(row)) and returns its sum, the
// softmax before its division (vek on this platform).
func softmaxExp(row []float32) float32 { return softmaxExpGo(row) }

// prefetchHead does nothing on this platform.
func prefetchHead(x []float32, rows, ld, d int) {}
