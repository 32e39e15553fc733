package cpu

import (
	"fmt"
	"unsafe"

	"github.com/clipidx/clipidx/internal/gemm"
)

// packBF16 packs every weight matrix once as bf16 for the bf16 kernels
// (gemm.PackBF16: nearest even; f16 and bf16 weights convert exactly), and
// releases each source matrix's pages as it goes, so the model holds 2 bytes
// a weight whatever the checkpoint stores. LayerNorm, softmax, GELU, the
// residual stream and the attention products stay float32.
func (f *fastCPU) packBF16() error {
	kernel, err := gemm.BF16Kernel()
	if err != nil {
		return fmt.Errorf("clipnpu: precision bf16: %w (use --precision f32)", err)
	}
	var all []*lin
	for _, t := range []*fastTower{f.vis, f.txt} {
		if t == nil {
			continue
		}
		for i := range t.layers {
			l := &t.layers[i]
			all = append(all, &l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2)
		}
		all = append(all, &t.proj)
	}
	if f.vis != nil {
		all = append(all, &f.patch)
	}
	for _, w := range all {
		p, err := gemm.PackBF16(&w.m)
		if err != nil {
			return fmt.Errorf("clipnpu: precision bf16: %w", err)
		}
		f.m.Mapping.Release(matrixBytes(&w.m))
		w.bf, w.m = p, gemm.Matrix{Rows: w.m.Rows, Cols: w.m.Cols}
	}
	f.precision, f.bf16 = "bf16", kernel
	f.m.DropMatrices()
	return nil
}

// matrixBytes is the memory behind a matrix's elements, for releasing its
// pages from a mapping.
func matrixBytes(m *gemm.Matrix) []byte {
	switch {
	case len(m.F32) > 0:
		return unsafe.Slice((*byte)(unsafe.Pointer(&m.F32[0])), 4*len(m.F32))
	case len(m.U16) > 0:
		return unsafe.Slice((*byte)(unsafe.Pointer(&m.U16[0])), 2*len(m.U16))
	}
	return nil
}
