package clipnpu

// The emulated NPU: every kernel of a CLIP bundle executed on the CPU with
// the arithmetic the cores use as far as the public sources say (bf16
// operands and results, float32 accumulation, B decoded from bfp16ebs8), so
// the replay's schedule, buffer views and host math can be checked against
// a float32 reference without hardware. What it cannot show is listed in
// clipnpu/NPU.md.

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/clipidx/clipidx/clipnpu/bundle"
)

// emuDevice implements npuDevice on the CPU.
type emuDevice struct {
	threads int
	mu      sync.Mutex
	unpack  map[*byte][]float32 // decoded B (and bias) per weight view
	ctxs    map[string]bool     // distinct xclbins, as hardware contexts
	runs    int                 // dispatches, for tests
}

func newEmuDevice(threads int) *emuDevice {
	return &emuDevice{threads: max(threads, 1), unpack: map[*byte][]float32{}, ctxs: map[string]bool{}}
}

type emuBuffer struct{ b []byte }

func (e *emuBuffer) Bytes() []byte                           { return e.b }
func (e *emuBuffer) Sync(off, size int, toDevice bool) error { return nil }

func (d *emuDevice) Alloc(size int) (npuBuffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("emulated NPU: buffer of %d bytes", size)
	}
	return &emuBuffer{b: make([]byte, size)}, nil
}

func (d *emuDevice) Describe() (string, string) {
	return "npu-emulated", "NPU kernels emulated on the CPU (test device; not hardware)"
}

func (d *emuDevice) Contexts() int { return len(d.ctxs) }

func (d *emuDevice) Close() error { return nil }

func (d *emuDevice) LoadKernel(b *bundle.Bundle, s kernelSpec) (npuKernel, error) {
	switch s.Kind {
	case kindGEMM:
		if err := s.Layout.check(); err != nil {
			return nil, fmt.Errorf("emulated %s: %w", s.Key, err)
		}
		bias := 0
		if s.Bias {
			bias = 4 * s.N
		}
		if s.BBytes != s.Layout.bytes()+bias {
			return nil, fmt.Errorf("emulated %s: b_bytes=%d is neither the packed B (%d) nor B plus a float32 bias (%d)", s.Key, s.BBytes, s.Layout.bytes(), s.Layout.bytes()+4*s.N)
		}
		switch s.Act {
		case "", "gelu", "quick_gelu":
		default:
			return nil, fmt.Errorf("emulated %s: unknown activation %q", s.Key, s.Act)
		}
	case kindMHA:
		if s.Heads <= 0 || s.Dim%s.Heads != 0 {
			return nil, fmt.Errorf("emulated %s: %d heads for width %d", s.Key, s.Heads, s.Dim)
		}
	case kindAddLN:
		if s.Dim <= 0 {
			return nil, fmt.Errorf("emulated %s: width %d", s.Key, s.Dim)
		}
	default:
		return nil, fmt.Errorf("emulated %s: unknown kernel kind", s.Key)
	}
	d.mu.Lock()
	d.ctxs[s.Xclbin] = true
	d.mu.Unlock()
	return &emuKernel{d: d, s: s}, nil
}

type emuKernel struct {
	d *emuDevice
	s kernelSpec
}

func (k *emuKernel) Run(args []bufView) error {
	k.d.mu.Lock()
	k.d.runs++
	k.d.mu.Unlock()
	switch k.s.Kind {
	case kindGEMM:
		return k.gemm(args)
	case kindMHA:
		return k.mha(args)
	default:
		return k.addLN(args)
	}
}

// weights decodes a packed weight view once: B [K, N] then the bias [N].
func (k *emuKernel) weights(w bufView) ([]float32, []float32, error) {
	key := &w.bytes()[0]
	k.d.mu.Lock()
	dec, ok := k.d.unpack[key]
	k.d.mu.Unlock()
	s := k.s
	if !ok {
		var err error
		dec, err = unpackB(w.bytes(), s.Layout)
		if err != nil {
			return nil, nil, err
		}
		if s.Bias {
			p := w.bytes()[s.Layout.bytes():]
			for n := 0; n < s.N; n++ {
				dec = append(dec, math.Float32frombits(binary.LittleEndian.Uint32(p[4*n:])))
			}
		}
		k.d.mu.Lock()
		k.d.unpack[key] = dec
		k.d.mu.Unlock()
	}
	B := dec[:s.K*s.N]
	var bias []float32
	if s.Bias {
		bias = dec[s.K*s.N:]
	}
	return B, bias, nil
}

// gemm: C [M, N] = act(A [M, K] · B + bias), float32 accumulation, the
// activation on the accumulator, one rounding to bf16 on the store.
func (k *emuKernel) gemm(args []bufView) error {
	s := k.s
	if len(args) != 3 {
		return fmt.Errorf("emulated %s: %d arguments, want [A, B, C]", s.Key, len(args))
	}
	a, w, c := args[0], args[1], args[2]
	if a.size != s.M*s.K*bf16Bytes || w.size != s.BBytes || c.size != s.M*s.N*bf16Bytes {
		return fmt.Errorf("emulated %s: argument sizes %d, %d, %d; want %d, %d, %d", s.Key, a.size, w.size, c.size, s.M*s.K*bf16Bytes, s.BBytes, s.M*s.N*bf16Bytes)
	}
	B, bias, err := k.weights(w)
	if err != nil {
		return fmt.Errorf("emulated %s: %w", s.Key, err)
	}
	A := make([]float32, s.M*s.K)
	getBF16(A, a.bytes())
	C := make([]float32, s.M*s.N)
	parallel(s.M, k.d.threads, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			acc := C[i*s.N : (i+1)*s.N]
			if bias != nil {
				copy(acc, bias)
			}
			for kk, av := range A[i*s.K : (i+1)*s.K] {
				if av == 0 {
					continue
				}
				brow := B[kk*s.N : (kk+1)*s.N]
				for n, bv := range brow {
					acc[n] += av * bv
				}
			}
			if s.Act != "" {
				refActivate(acc, s.Act)
			}
		}
	})
	putBF16(c.bytes(), C)
	return nil
}

// mha: per head, softmax(q·kᵀ/√hd)·v over bf16 q, k, v (column thirds of
// the [L, 3·H] view), o [L, H] in bf16. Vision masks keys past ValidKeys;
// text runs causal attention inside each Seq-row sequence.
func (k *emuKernel) mha(args []bufView) error {
	s := k.s
	if len(args) != 4 {
		return fmt.Errorf("emulated %s: %d arguments, want [q, k, v, o]", s.Key, len(args))
	}
	q, o := args[0], args[3]
	if args[1] != q || args[2] != q {
		return fmt.Errorf("emulated %s: q, k and v must be the same view of the qkv output", s.Key)
	}
	H := s.Dim
	if q.size%(3*H*bf16Bytes) != 0 {
		return fmt.Errorf("emulated %s: qkv view of %d bytes is not whole rows of %d", s.Key, q.size, 3*H)
	}
	L := q.size / (3 * H * bf16Bytes)
	if o.size != L*H*bf16Bytes {
		return fmt.Errorf("emulated %s: o view of %d bytes, want %d rows of %d", s.Key, o.size, L, H)
	}
	if s.Causal && (s.Seq <= 0 || L%s.Seq != 0) {
		return fmt.Errorf("emulated %s: %d rows are not whole sequences of %d", s.Key, L, s.Seq)
	}
	if !s.Causal && (s.ValidKeys <= 0 || s.ValidKeys > L) {
		return fmt.Errorf("emulated %s: %d valid keys in a view of %d rows", s.Key, s.ValidKeys, L)
	}
	X := make([]float32, L*3*H)
	getBF16(X, q.bytes())
	O := make([]float32, L*H)
	hd := H / s.Heads
	scale := 1 / math.Sqrt(float64(hd))
	parallel(s.Heads*L, k.d.threads, func(lo, hi int) {
		p := make([]float64, L)
		for r := lo; r < hi; r++ {
			head, t := r/L, r%L
			k0, k1 := 0, s.ValidKeys // keys this query sees
			if s.Causal {
				k0, k1 = t/s.Seq*s.Seq, t+1
			}
			qt := X[t*3*H+head*hd : t*3*H+head*hd+hd]
			maxS := math.Inf(-1)
			for j := k0; j < k1; j++ {
				p[j] = dot64(qt, X[j*3*H+H+head*hd:j*3*H+H+head*hd+hd]) * scale
				maxS = math.Max(maxS, p[j])
			}
			var sum float64
			for j := k0; j < k1; j++ {
				p[j] = math.Exp(p[j] - maxS)
				sum += p[j]
			}
			for e := 0; e < hd; e++ {
				var acc float64
				for j := k0; j < k1; j++ {
					acc += p[j] * float64(X[j*3*H+2*H+head*hd+e])
				}
				O[t*H+head*hd+e] = float32(acc / sum)
			}
		}
	})
	putBF16(o.bytes(), O)
	return nil
}

// addLN: y = x + d (bf16), h = LayerNorm(y) without affine (bf16), over
// [rows, H] views; args [x, d, y, h].
func (k *emuKernel) addLN(args []bufView) error {
	s := k.s
	if len(args) != 4 {
		return fmt.Errorf("emulated %s: %d arguments, want [x, d, y, h]", s.Key, len(args))
	}
	n := args[0].size
	for _, a := range args[1:] {
		if a.size < n {
			return fmt.Errorf("emulated %s: views of %d and %d bytes", s.Key, n, a.size)
		}
	}
	if n%(s.Dim*bf16Bytes) != 0 {
		return fmt.Errorf("emulated %s: %d bytes are not whole rows of %d", s.Key, n, s.Dim)
	}
	rows := n / (s.Dim * bf16Bytes)
	x := make([]float32, rows*s.Dim)
	dd := make([]float32, rows*s.Dim)
	getBF16(x, args[0].bytes())
	getBF16(dd, args[1].bytes()[:n])
	for i := range x {
		x[i] += dd[i]
	}
	roundBF16(x)
	h := make([]float32, len(x))
	lnNoAffine(h, x, rows, s.Dim, s.Eps, k.d.threads)
	putBF16(args[2].bytes()[:n], x)
	putBF16(args[3].bytes()[:n], h)
	return nil
}
