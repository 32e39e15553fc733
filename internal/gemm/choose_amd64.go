//go:build amd64 && !purego

package gemm

// cpuID names the processor for the kernel choice: vendor, family, model
// and stepping (a new stepping may change what is fastest).
func cpuID() string {
	_, b, c, d := cpuid(0, 0)
	vendor := string(le32(b)) + string(le32(d)) + string(le32(c))
	a, _, _, _ := cpuid(1, 0)
	family, model, stepping := a>>8&0xf, a>>4&0xf, a&0xf
	if family == 0xf {
		family += a >> 20 & 0xff
	}
	if family == 6 || family >= 0xf {
		model |= (a >> 16 & 0xf) << 4
	}
	return sprintf("%s family %#x model %#x stepping %d", vendor, family, model, stepping)
}
