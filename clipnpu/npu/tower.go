package npu

import (
	"fmt" // One transformer tower on the device, scheduled as taconite-clip's
	// tower.rs replays IRON's clip_npu.py (read, not copied). Per layer:
	//
	//	qkv GEMM (per M-row chunk) → MHA (per view) → o GEMM → AddLN(+o)
	//	→ fc1 GEMM (+GELU) → fc2 GEMM → AddLN(+fc2)
	//
	// each kernel reading the previous one's output buffer in place. The
	// LayerNorm affines are folded into the packed qkv and fc1 weights and fc2's
	// bias rides an extra column of fc1; the residual stream is bf16 between
	// kernels, ping-ponging between xres[0] and xres[1].
	//
	// Legend: R device rows (v_rows / t_rows), H width (v_dim / t_dim),
	// F fc1's N (the MLP width plus its extra columns).

	"github.com/clipidx/clipidx/clipnpu/core"
)

const bf16Bytes = 2

// npuIO is one GEMM stage's operands: A [R, K] and C [R, N] in bf16, cut
// into M-row chunk views, one dispatch each.
type npuIO struct {
	spec   kernelSpec
	kernel npuKernel
	a, c   bufView
	chunks [][2]bufView // (A chunk, C chunk)
	rows   int
}

// newIO allocates a stage of rows rows; a non-nil src makes A be src's C,
// read in place (fc2 reads fc1's output).
func newIO(dev npuDevice, spec kernelSpec, k npuKernel, rows int, src *npuIO) (*npuIO, error) {
	if rows%spec.M != 0 {
		return nil, fmt.Errorf("%s: %d rows is not a multiple of M = %d", spec.Key, rows, spec.M)
	}
	io := &npuIO{spec: spec, kernel: k, rows: rows}
	if src != nil {
		if src.spec.N != spec.K {
			return nil, fmt.Errorf("%s: A width %d != K %d", spec.Key, src.spec.N, spec.K)
		}
		io.a = src.c
	} else {
		b, err := dev.Alloc(rows * spec.K * bf16Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s A: %w", spec.Key, err)
		}
		io.a = wholeBuffer(b)
	}
	c, err := dev.Alloc(rows * spec.N * bf16Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s C: %w", spec.Key, err)
	}
	io.c = wholeBuffer(c)
	for i := 0; i < rows/spec.M; i++ {
		a, err := io.a.sub(i*spec.M*spec.K*bf16Bytes, spec.M*spec.K*bf16Bytes)
		if err != nil {
			return nil, err
		}
		cc, err := io.c.sub(i*spec.M*spec.N*bf16Bytes, spec.M*spec.N*bf16Bytes)
		if err != nil {
			return nil, err
		}
		io.chunks = append(io.chunks, [2]bufView{a, cc})
	}
	return io, nil
}

// run dispatches every chunk with weights w.
func (io *npuIO) run(w bufView) error {
	for i, ch := range io.chunks {
		if err := io.kernel.Run([]bufView{ch[0], w, ch[1]}); err != nil {
			return fmt.Errorf("%s chunk %d: %w", io.spec.Key, i, err)
		}
	}
	return nil
}

// npuTower is one tower's device state.
type npuTower struct {
	prefix string // "v" or "t"
	layers int
	dim    int     // H
	rows   int     // R
	eps    float32 // LayerNorm epsilon (host side too)

	qkv, o, fc1, fc2 *npuIO
	mhaK, addlnK     npuKernel
	xres             [2]bufView      // residual stream [R, H] bf16
	w                [][4]bufView    // per layer: packed qkv, o, fc1, fc2
	mha              [][4]bufView    // per dispatch: q, k, v, o
	trace            func(op string) // test hook: called before each dispatch
}

// weightLoader is implemented by a device that takes a GEMM's packed
// weights (a read-only view of the bundle, valid while the device lives)
// in its own form instead of a buffer copy: the emulator decodes them once.
type weightLoader interface {
	LoadWeights(spec kernelSpec, data []byte) (bufView, error)
}

// towerSpecs are the kernels a tower needs, loaded by the caller.
type towerSpecs struct {
	qkv, o, fc1, fc2, mha, addln kernelSpec
	kernels                      map[string]npuKernel
}

// mhaSpan is one MHA dispatch: first row and row count.
type mhaSpan struct{ row, rows int }

// newTower allocates a tower's buffers and uploads its packed weights.
func newTower(dev npuDevice, ts towerSpecs, prefix string, layers, dim, rows int, eps float32, spans []mhaSpan, weights func(layer int, name string) ([]byte, error)) (*npuTower, error) {
	t := &npuTower{prefix: prefix, layers: layers, dim: dim, rows: rows, eps: eps}
	for _, c := range []struct {
		s    kernelSpec
		k, n int
	}{{ts.qkv, dim, 3 * dim}, {ts.o, dim, dim}, {ts.fc1, dim, ts.fc1.N}, {ts.fc2, ts.fc1.N, dim}} {
		if c.s.K != c.k || c.s.N != c.n {
			return nil, fmt.Errorf("%w: gemm %s: K x N = %d x %d, want %d x %d", core.ErrBadModel, c.s.Key, c.s.K, c.s.N, c.k, c.n)
		}
	}
	var err error
	if t.qkv, err = newIO(dev, ts.qkv, ts.kernels[ts.qkv.Key], rows, nil); err != nil {
		return nil, err
	}
	if t.o, err = newIO(dev, ts.o, ts.kernels[ts.o.Key], rows, nil); err != nil {
		return nil, err
	}
	if t.fc1, err = newIO(dev, ts.fc1, ts.kernels[ts.fc1.Key], rows, nil); err != nil {
		return nil, err
	}
	if t.fc2, err = newIO(dev, ts.fc2, ts.kernels[ts.fc2.Key], rows, t.fc1); err != nil {
		return nil, err
	}
	t.mhaK, t.addlnK = ts.kernels[ts.mha.Key], ts.kernels[ts.addln.Key]
	for i := range t.xres {
		b, err := dev.Alloc(rows * dim * bf16Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s residual: %w", prefix, err)
		}
		t.xres[i] = wholeBuffer(b)
	}
	specs := [4]kernelSpec{ts.qkv, ts.o, ts.fc1, ts.fc2}
	for l := 0; l < layers; l++ {
		var lw [4]bufView
		for j, name := range []string{"qkv", "o", "fc1", "fc2"} {
			data, err := weights(l, name)
			if err != nil {
				return nil, err
			}
			if len(data) != specs[j].BBytes {
				return nil, fmt.Errorf("%w: tensor %s.%d.%s has %d bytes, gemm %s says b_bytes=%d", core.ErrBadModel, prefix, l, name, len(data), specs[j].Key, specs[j].BBytes)
			}
			if wl, ok := dev.(weightLoader); ok {
				if lw[j], err = wl.LoadWeights(specs[j], data); err != nil {
					return nil, fmt.Errorf("%s.%d.%s: %w", prefix, l, name, err)
				}
				continue
			}
			b, err := dev.Alloc(len(data))
			if err != nil {
				return nil, fmt.Errorf("%s.%d.%s: %w", prefix, l, name, err)
			}
			v := wholeBuffer(b)
			copy(v.bytes(), data)
			if err := v.sync(true); err != nil {
				return nil, err
			}
			lw[j] = v
		}
		t.w = append(t.w, lw)
	}
	for _, s := range spans {
		if s.row+s.rows > rows {
			return nil, fmt.Errorf("%w: %s: an MHA dispatch reaches row %d of %d", core.ErrBadModel, prefix, s.row+s.rows, rows)
		}
		// q, k and v are the same rows of qkv.C (the kernel has the column
		// offsets compiled in); o is the matching rows of o.A.
		q, err := t.qkv.c.sub(s.row*3*dim*bf16Bytes, s.rows*3*dim*bf16Bytes)
		if err != nil {
			return nil, err
		}
		o, err := t.o.a.sub(s.row*dim*bf16Bytes, s.rows*dim*bf16Bytes)
		if err != nil {
			return nil, err
		}
		t.mha = append(t.mha, [4]bufView{q, q, q, o})
	}
	return t, nil
}

// run takes x [R, H] float32 (the embedded input, padding rows zero) through
// every layer and returns the final residual stream [R, H] as float32.
func (t *npuTower) run(x []float32, threads int) ([]float32, error) {
	R, H := t.rows, t.dim
	if len(x) != R*H {
		return nil, fmt.Errorf("%s tower: input of %d values, want %d", t.prefix, len(x), R*H)
	}
	// The residual in bf16, and its affine-free LayerNorm (the affine is
	// folded into qkv) as the first qkv GEMM's A.
	xb := make([]float32, R*H)
	for i, v := range x {
		xb[i] = core.BF16ToF32(core.F32ToBF16(v))
	}
	h := make([]float32, R*H)
	lnNoAffine(h, xb, R, H, t.eps, threads)
	putBF16(t.xres[0].bytes(), xb)
	putBF16(t.qkv.a.bytes(), h)
	if err := t.xres[0].sync(true); err != nil {
		return nil, err
	}
	if err := t.qkv.a.sync(true); err != nil {
		return nil, err
	}

	xa, xb2 := t.xres[0], t.xres[1]
	for l, w := range t.w {
		step := func(op string, f func() error) error {
			if t.trace != nil {
				t.trace(op)
			}
			if err := f(); err != nil {
				return fmt.Errorf("%s layer %d: %w", t.prefix, l, err)
			}
			return nil
		}
		if err := step("qkv", func() error { return t.qkv.run(w[0]) }); err != nil {
			return nil, err
		}
		for _, m := range t.mha {
			if err := step("mha", func() error { return t.mhaK.Run(m[:]) }); err != nil {
				return nil, err
			}
		}
		if err := step("o", func() error { return t.o.run(w[1]) }); err != nil {
			return nil, err
		}
		if err := step("addln", func() error { return t.addlnK.Run([]bufView{xa, t.o.c, xb2, t.fc1.a}) }); err != nil {
			return nil, err
		}
		if err := step("fc1", func() error { return t.fc1.run(w[2]) }); err != nil {
			return nil, err
		}
		if err := step("fc2", func() error { return t.fc2.run(w[3]) }); err != nil {
			return nil, err
		}
		if err := step("addln", func() error { return t.addlnK.Run([]bufView{xb2, t.fc2.c, xa, t.qkv.a}) }); err != nil {
			return nil, err
		}
	}
	if err := xa.sync(false); err != nil {
		return nil, err
	}
	y := make([]float32, R*H)
	getBF16(y, xa.bytes())
	return y, nil
}
