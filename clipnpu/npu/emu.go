package npu

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/internal/gemm"
) // The emulated NPU: every kernel of a CLIP bundle executed on the CPU with
// the arithmetic the cores use as far as the public sources say (bf16
// operands and results, float32 accumulation, B decoded from bfp16ebs8).
// It serves twice: the tests check the replay's schedule, buffer views and
// host math through it against a float32 reference without hardware, and
// Load runs a bundle on it when no NPU is usable (DeviceEmulatedNPU), the
// CPU path for bundles. What it cannot show is listed in clipnpu/NPU.md.
//
// Speed: each packed weight matrix is decoded once, when the tower uploads
// it, into bf16 Bᵀ [N, K] (exact, 2 bytes a weight; no packed copy is
// kept and the bundle pages it came from leave the resident set), and the
// GEMMs and the attention products run on internal/gemm's
// Pool. Legend as in npu_tower.go; L rows of one MHA view, hd head width.

// emuDevice implements npuDevice (and weightLoader) on the CPU.
type emuDevice struct {
	threads      int
	pool         *gemm.Pool
	device, note string // what Describe reports

	mu   sync.Mutex
	ctxs map[string]bool // distinct xclbins, as hardware contexts
	runs int             // dispatches, for tests
	held int64           // bytes of decoded weights
}

// NewEmuDevice starts an emulated device on threads workers (0 or less:
// GOMAXPROCS), reporting itself as DeviceEmulatedNPU.
func NewEmuDevice(threads int) *emuDevice {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &emuDevice{threads: threads, pool: gemm.NewPool(threads), ctxs: map[string]bool{},
		device: core.DeviceEmulatedNPU, note: "bundle kernels emulated on the CPU (bf16 numerics as clipnpu/NPU.md assumes them; not hardware)"}
}

type emuBuffer struct{ b []byte }

func (e *emuBuffer) Bytes() []byte                           { return e.b }
func (e *emuBuffer) Sync(off, size int, toDevice bool) error { return nil }

// emuWeights is one packed weight matrix on the emulated device: a view of
// the packed bytes (read-only, for the argument size checks only: a view of
// the bundle's mapping whose pages are released once decoded), B decoded to
// bf16 Bᵀ [N, K] and the float32 bias [N] (nil without one).
type emuWeights struct {
	packed []byte
	w      gemm.Matrix
	bias   []float32
}

func (e *emuWeights) Bytes() []byte                           { return e.packed }
func (e *emuWeights) Sync(off, size int, toDevice bool) error { return nil }

func (d *emuDevice) Alloc(size int) (npuBuffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("emulated NPU: buffer of %d bytes", size)
	}
	return &emuBuffer{b: make([]byte, size)}, nil
}

// LoadWeights decodes gemm s's packed weights (B, then the float32 bias
// when s.Bias) once. data must stay valid and unchanged while the device
// lives (it is the bundle's mapping).
func (d *emuDevice) LoadWeights(s kernelSpec, data []byte) (bufView, error) {
	if err := s.Layout.check(); err != nil {
		return bufView{}, fmt.Errorf("emulated %s: %w", s.Key, err)
	}
	if len(data) != s.BBytes {
		return bufView{}, fmt.Errorf("emulated %s: %d weight bytes, b_bytes=%d", s.Key, len(data), s.BBytes)
	}
	ew := &emuWeights{packed: data, w: gemm.Matrix{Rows: s.N, Cols: s.K, Dtype: gemm.BF16, U16: make([]uint16, s.K*s.N)}}
	if err := decodeBT(ew.w.U16, data, s.Layout, d.threads); err != nil {
		return bufView{}, fmt.Errorf("emulated %s: %w", s.Key, err)
	}
	if s.Bias {
		p := data[s.Layout.bytes():]
		ew.bias = make([]float32, s.N)
		for n := range ew.bias {
			ew.bias[n] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*n:]))
		}
	}
	releasePages(data[:s.Layout.bytes()]) // decoded: only the size checks look at it again
	d.mu.Lock()
	d.held += int64(2*len(ew.w.U16) + 4*len(ew.bias))
	d.mu.Unlock()
	return wholeBuffer(ew), nil
}

func (d *emuDevice) Describe() (string, string) { return d.device, d.note }

func (d *emuDevice) Contexts() int { return len(d.ctxs) }

func (d *emuDevice) Close() error {
	if d.pool != nil {
		d.pool.Close()
		d.pool = nil
	}
	return nil
}

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

// getBF16Par and putBF16Par are getBF16 and putBF16 over the device's
// threads, a row of width values at a time.
func (d *emuDevice) getBF16Par(dst []float32, src []byte, width int) {
	core.Parallel(len(dst)/width, d.threads, func(lo, hi int) { getBF16(dst[lo*width:hi*width], src[2*lo*width:]) })
}

func (d *emuDevice) putBF16Par(dst []byte, src []float32, width int) {
	core.Parallel(len(src)/width, d.threads, func(lo, hi int) { putBF16(dst[2*lo*width:], src[lo*width:hi*width]) })
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
	ew, ok := w.buf.(*emuWeights)
	if !ok || w.off != 0 || ew.w.Rows != s.N || ew.w.Cols != s.K || (ew.bias != nil) != s.Bias {
		return fmt.Errorf("emulated %s: the B argument is not weights loaded for this kernel (%d x %d)", s.Key, s.K, s.N)
	}
	A := make([]float32, s.M*s.K)
	k.d.getBF16Par(A, a.bytes(), s.K)
	C := make([]float32, s.M*s.N)
	k.d.pool.Linear(C, A, s.M, &ew.w, ew.bias)
	if s.Act != "" {
		core.Parallel(s.M, k.d.threads, func(lo, hi int) { core.Activate(C[lo*s.N:hi*s.N], s.Act) })
	}
	k.d.putBF16Par(c.bytes(), C, s.N)
	return nil
}

// mha: per head, softmax(q·kᵀ/√hd)·v over bf16 q, k, v (column thirds of
// the [L, 3·H] view), o [L, H] in bf16. Vision masks keys past ValidKeys;
// text runs causal attention inside each Seq-row sequence. The products
// accumulate in float32 (gemm), the softmax in float64.
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
	k.d.getBF16Par(X, q.bytes(), 3*H)
	O := make([]float32, L*H)
	hd := H / s.Heads
	alpha := float32(1 / math.Sqrt(float64(hd)))
	// One work item per (head, block of rows with the same keys): the whole
	// view for vision, one sequence for text.
	rows, keys := L, s.ValidKeys
	if s.Causal {
		rows, keys = s.Seq, s.Seq
	}
	blocks := L / rows
	k.d.pool.ParallelWorkers(s.Heads*blocks, func(wk *gemm.Worker, lo, hi int) {
		p := make([]float32, rows*keys)
		for item := lo; item < hi; item++ {
			head, r0 := item/blocks, item%blocks*rows
			qh := X[r0*3*H+head*hd:]
			kh := X[r0*3*H+H+head*hd:]
			vh := X[r0*3*H+2*H+head*hd:]
			// p [rows, keys] = q·kᵀ/√hd, then row-wise softmax over the keys
			// each query sees.
			wk.MatMul(p, keys, qh, 3*H, kh, 3*H, rows, keys, hd, true, alpha)
			for t := 0; t < rows; t++ {
				row := p[t*keys : (t+1)*keys]
				seen := keys
				if s.Causal {
					seen = t + 1
				}
				softmaxPrefix(row, seen)
			}
			wk.MatMul(O[r0*H+head*hd:], H, p, keys, vh, 3*H, rows, hd, keys, false, 1)
		}
	})
	k.d.putBF16Par(o.bytes(), O, H)
	return nil
}

// softmaxPrefix replaces row[:n] with its softmax (float64 sums) and zeroes
// row[n:], the masked keys.
func softmaxPrefix(row []float32, n int) {
	m := math.Inf(-1)
	for _, v := range row[:n] {
		m = math.Max(m, float64(v))
	}
	var sum float64
	for j, v := range row[:n] {
		e := math.Exp(float64(v) - m)
		row[j] = float32(e)
		sum += e
	}
	inv := 1 / sum
	for j := range row[:n] {
		row[j] = float32(float64(row[j]) * inv)
	}
	clear(row[n:])
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
	k.d.getBF16Par(x, args[0].bytes(), s.Dim)
	k.d.getBF16Par(dd, args[1].bytes()[:n], s.Dim)
	for i := range x {
		x[i] += dd[i]
	}
	roundBF16(x)
	h := make([]float32, len(x))
	lnNoAffine(h, x, rows, s.Dim, s.Eps, k.d.threads)
	k.d.putBF16Par(args[2].bytes()[:n], x, s.Dim)
	k.d.putBF16Par(args[3].bytes()[:n], h, s.Dim)
	return nil
}
