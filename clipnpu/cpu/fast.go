package cpu

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/viterin/vek/vek32"
) // The fast CPU forward: the same math as the reference forward (ref.go),
// laid out for speed. Every linear layer, and the patch embedding as a GEMM
// over im2col'd patches, runs through internal/gemm's Pool.Linear on the
// stored weights (16-bit matrices stay 16-bit and are widened while packing;
// float32 matrices are views of the mapping). Attention runs one
// (sequence, head) pair per task on the pool's workers with single-threaded
// GEMMs for q·kᵀ (scale folded into alpha) and p·v. LayerNorm, softmax,
// GELU and the residual adds are vectorised row by row (vek where it
// serves) and split across the same workers with Pool.Parallel. Activation
// buffers are allocated once for the largest chunk seen and reused; a pass
// allocates only its result.
//
// Legend: clipnpu/core's (package doc), and for one tower pass: n
// sequences in a chunk; T here is the tower's tokens per sequence (Tok =
// 257 for ViT-H/14 images, T = 77 for text); A = nh heads of width
// d = hd = H/A; R rows of the residual stream.
//
// Sequences are packed: sequence b occupies rows [off[b], off[b]+len[b]).
// Images keep all T tokens. A prompt keeps only the tokens up to the one it
// pools (its EOS): under the causal mask the later tokens (padding) cannot
// change that row, so they are never computed and R = Σ len[b] ≤ n·T. The
// result is the same as HF's full-context forward, at a fraction of the
// cost for short prompts.

// Chunk sizes bound the activation memory: a call with more inputs runs in
// chunks of at most this many (embeddings do not depend on their batch).
const (
	fastImageChunk = 8  // images: 8·257·5120·4 B ≈ 42 MB MLP buffer for ViT-H/14
	fastTextChunk  = 32 // prompts: 32·77·4096·4 B ≈ 40 MB
)

// fastCPU is the fast Backend. It owns the model and the worker pool.
type fastCPU struct {
	m    *core.Model
	pool *gemm.Pool
	vis  *fastTower // nil when the image tower was not loaded
	txt  *fastTower // nil when the text tower was not loaded
	// patch is the patch-embedding conv as a matrix [H, 3·P·P].
	patch     lin
	precision string // "f32" or "bf16" (Options.Precision)
	bf16      string // the bf16 kernel, when precision is bf16
	unpacked  int    // bytes of heap-held weights let go since the last GC (warmF32)
	// packedN and packedBytes count the float32 matrices warmF32 has
	// packed and their stored size, for Info (which may be asked while a
	// pass runs).
	packedN, packedBytes atomic.Int64
	packEarly            bool       // Options.PackEarly
	cur                  *fastTower // the tower of the pass running (warmF32)
	cache                packCache  // packed weights on disk (packcache.go)
}

// lin is one weight matrix as the products read it: a gemm view of the
// weights as held (f32, f16 or bf16, widened while packing), or, with
// precision bf16, the matrix packed once as bf16 for the bf16 kernels.
type lin struct {
	m   gemm.Matrix
	bf  *gemm.PackedBF16
	src *core.Tensor // the model's tensor m views, released once packed
}

// linear is y[n, w.Rows] = x[n, w.Cols]·wᵀ + bias on the pool, in the
// backend's precision.
func (f *fastCPU) linear(y, x []float32, n int, w *lin, bias []float32) {
	f.linearStrided(y, w.m.Rows, x, w.m.Cols, n, w, bias) // w.m keeps its shape when packed to bf16
}

// linearStrided is linear with row strides ldy and ldx; the bf16 products
// take dense rows only.
func (f *fastCPU) linearStrided(y []float32, ldy int, x []float32, ldx int, n int, w *lin, bias []float32) {
	f.warmF32(w)
	if w.bf != nil {
		if ldy != w.bf.Rows || ldx != w.bf.Cols {
			panic(fmt.Sprintf("clipnpu: bf16 linear with strides %d, %d for [%d, %d] weights", ldy, ldx, w.bf.Rows, w.bf.Cols))
		}
		f.pool.LinearBF16(y, x, n, w.bf, bias)
		return
	}
	f.pool.LinearStrided(y, ldy, x, ldx, n, &w.m, bias)
}

// fastLayer is one encoder layer with its matrices as gemm views.
type fastLayer struct {
	ln1W, ln1B, ln2W, ln2B []float32
	q, k, v, o, fc1, fc2   lin
	qB, kB, vB, oB         []float32
	fc1B, fc2B             []float32
	// The query, key and value matrices for gemm.LinearStack, and their
	// biases end to end, so that the three projections run as one product.
	qkv  []*gemm.Matrix
	qkvB []float32
	// qkvBF is the bf16 q, k and v as one matrix [3H, H] (stackQKV), or
	// nil: then the three run as separate products.
	qkvBF *gemm.PackedBF16
}

// fastTower is one tower's weights as gemm views plus its reusable buffers.
type fastTower struct {
	T, H, M, A int
	eps        float32
	quick      bool // quick_gelu instead of exact GELU
	causal     bool // text: token t attends to tokens ≤ t
	colsPer    int  // vision: im2col values per image (G²·3·P²), kept in mlp
	layers     []fastLayer
	finW, finB []float32 // final LayerNorm (post_layernorm / final_layer_norm) [H]
	proj       lin       // [D, H], no bias

	// Buffers for up to cap sequences, reused across passes.
	cap              int
	x                []float32 // residual stream [R, H]
	h                []float32 // LayerNorm output, attention context, MLP output [R, H]
	k, v             []float32 // the last layer's keys and values [R, H], in qkv
	qp               []float32 // the last layer's pooled queries [n, H]
	qkv              []float32 // the three projections side by side [R, 3H]; k and v share it
	mlp              []float32 // MLP hidden [R, M]; also im2col scratch; shares qkv's memory
	scores           []float32 // per worker [T, scoreStride(T)]
	pooled, pooledLN []float32 // [n, H]
	at               []int     // [n] pooled token of each sequence (within it)
	off, lens        []int     // [n] first row and row count of each sequence
	rows             int       // R of the current chunk
	mlpDense         bool      // the MLP hidden at row stride M (bf16: its products take dense rows only)
	mlpLD            int       // row stride of layer's MLP hidden (≥ M; 0 until reserve)
	aux              []float32 // per worker [M] scratch for quick_gelu

	// When to pack the float32 weights (packf32.go): passes run, the wall
	// time of those run before packing was due, and whether it is.
	passes  int
	spent   time.Duration
	packDue bool
	saved   bool // its float32 panels are in the cache (packcache.go)
}

// fastMatrix views a weight tensor as a gemm.Matrix (no copy).
func fastMatrix(t core.Tensor) gemm.Matrix {
	m := gemm.Matrix{Rows: t.Rows, Cols: t.Cols, F32: t.F32, U16: t.U16}
	switch t.Dtype {
	case core.F16:
		m.Dtype = gemm.F16
	case core.BF16:
		m.Dtype = gemm.BF16
	default:
		m.Dtype = gemm.F32
	}
	return m
}

// newLin views the model's tensor t for the products.
func newLin(t *core.Tensor) lin { return lin{m: fastMatrix(*t), src: t} }

func fastLayers(ls []core.LayerWeights) []fastLayer {
	out := make([]fastLayer, len(ls))
	for i := range ls {
		l := &ls[i]
		out[i] = fastLayer{
			ln1W: l.LN1W, ln1B: l.LN1B, ln2W: l.LN2W, ln2B: l.LN2B,
			q: newLin(&l.Q), k: newLin(&l.K), v: newLin(&l.V), o: newLin(&l.O),
			fc1: newLin(&l.FC1), fc2: newLin(&l.FC2),
			qB: l.QB, kB: l.KB, vB: l.VB, oB: l.OB, fc1B: l.FC1B, fc2B: l.FC2B,
		}
		o := &out[i]
		o.qkv = []*gemm.Matrix{&o.q.m, &o.k.m, &o.v.m}
		if l.QB != nil || l.KB != nil || l.VB != nil {
			H := l.Q.Rows
			o.qkvB = make([]float32, 3*H)
			copy(o.qkvB, l.QB)
			copy(o.qkvB[H:], l.KB)
			copy(o.qkvB[2*H:], l.VB)
		}
	}
	return out
}

// NewFast wraps m in the fast forward on a pool of opts.Threads workers
// (0 = every core), in opts.Precision (see core.Options). It takes
// ownership of m, also when it fails.
func NewFast(m *core.Model, opts core.Options) (core.Backend, error) {
	if m == nil {
		return nil, fmt.Errorf("clipnpu: fast cpu: nil model")
	}
	f := &fastCPU{m: m, pool: gemm.NewPool(opts.Threads), precision: "f32", packEarly: opts.PackEarly, cache: packCache{dir: opts.PackCache}}
	if v := m.Vision; v != nil {
		c := m.Cfg.Vision
		f.vis = &fastTower{T: c.Tokens(), H: c.Hidden, M: c.MLP, A: c.Heads, eps: c.LayerNormEps,
			quick: c.Act == "quick_gelu", layers: fastLayers(v.Layers), finW: v.PostW, finB: v.PostB, proj: newLin(&v.Proj)}
		f.patch = newLin(&v.Patch)
		f.vis.colsPer = c.Grid() * c.Grid() * 3 * c.Patch * c.Patch
	}
	if t := m.Text; t != nil {
		c := m.Cfg.Text
		f.txt = &fastTower{T: c.Context, H: c.Hidden, M: c.MLP, A: c.Heads, eps: c.LayerNormEps,
			quick: c.Act == "quick_gelu", causal: true, layers: fastLayers(t.Layers), finW: t.FinalW, finB: t.FinalB, proj: newLin(&t.Proj)}
	}
	switch opts.Precision {
	case "", "f32":
		for _, t := range f.towers() {
			t.saved = f.mapF32(t)
			t.packDue = t.saved
		}
	case "bf16":
		if err := f.packBF16(); err != nil {
			f.Close()
			return nil, err
		}
	default:
		f.Close()
		return nil, fmt.Errorf("clipnpu: unknown precision %q (want f32 or bf16)", opts.Precision)
	}
	return f, nil
}

func (f *fastCPU) Info() core.Info {
	info := f.m.Describe(core.DeviceCPU)
	info.Precision = f.precision
	if f.bf16 != "" {
		info.DeviceNote = "bf16 products on " + f.bf16
	}
	if note := f.cache.note.Load(); note != nil {
		info.DeviceNote = strings.TrimPrefix(info.DeviceNote+"; "+*note, "; ")
	}
	if n := f.packedN.Load(); n > 0 {
		// "f32 (as stored, memory-mapped)" → "f32 (as stored, memory-mapped; 194 matrices, 2.52 GB, since packed for the float32 kernel)"
		note := fmt.Sprintf("%d matrices, %.2f GB, since packed for the float32 kernel", n, float64(f.packedBytes.Load())/1e9)
		if w, ok := strings.CutSuffix(info.Weights, ")"); ok {
			info.Weights = w + "; " + note + ")"
		} else {
			info.Weights += " (" + note + ")"
		}
	}
	return info
}

func (f *fastCPU) Close() error {
	if f.pool == nil {
		return nil
	}
	f.pool.Close()
	f.pool, f.vis, f.txt, f.patch = nil, nil, nil, lin{}
	f.cache.close()
	return f.m.Close()
}

// EncodeImages embeds n images, pixels float32 [n, 3, S, S] → [n, D].
func (f *fastCPU) EncodeImages(pixels []float32, n int) ([]float32, error) {
	if f.pool == nil {
		return nil, fmt.Errorf("clipnpu: encode images: backend is closed")
	}
	if f.vis == nil {
		return nil, fmt.Errorf("encode images: %w (loaded for text only)", core.ErrNoTower)
	}
	S := f.m.Cfg.Vision.ImageSize
	per := 3 * S * S
	if n < 0 || len(pixels) != n*per {
		return nil, fmt.Errorf("clipnpu: encode images: %d pixel values for n=%d, want n·3·%d·%d", len(pixels), n, S, S)
	}
	D := f.m.Cfg.ProjectionDim
	out := make([]float32, n*D)
	for lo := 0; lo < n; lo += fastImageChunk {
		hi := min(n, lo+fastImageChunk)
		f.pass(f.vis, func() { f.images(out[lo*D:hi*D], pixels[lo*per:hi*per], hi-lo) })
	}
	return out, nil
}

// EncodeTexts embeds n token sequences, ids int32 [n, T] → [n, D].
func (f *fastCPU) EncodeTexts(ids []int32, n int) ([]float32, error) {
	if f.pool == nil {
		return nil, fmt.Errorf("clipnpu: encode texts: backend is closed")
	}
	if f.txt == nil {
		return nil, fmt.Errorf("encode texts: %w (loaded for images only)", core.ErrNoTower)
	}
	T, V := f.txt.T, f.m.Cfg.Text.Vocab
	if n < 0 || len(ids) != n*T {
		return nil, fmt.Errorf("clipnpu: encode texts: %d ids for n=%d, want n·%d", len(ids), n, T)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= V {
			return nil, fmt.Errorf("clipnpu: encode texts: token id %d at [%d, %d] outside the vocabulary [0, %d)", id, i/T, i%T, V)
		}
	}
	D := f.m.Cfg.ProjectionDim
	out := make([]float32, n*D)
	for lo := 0; lo < n; lo += fastTextChunk {
		hi := min(n, lo+fastTextChunk)
		f.pass(f.txt, func() { f.texts(out[lo*D:hi*D], ids[lo*T:hi*T], hi-lo) })
	}
	return out, nil
}

// reserve sizes the buffers for n sequences (grow only).
func (t *fastTower) reserve(n, workers int) {
	if n <= t.cap {
		return
	}
	R := n * t.T
	t.cap = n
	t.x = make([]float32, R*t.H)
	t.h = make([]float32, R*t.H)
	t.qp = make([]float32, n*t.H)
	// layer uses qkv (then its first third for the attention output
	// projection), lastLayer k and v: never both at once. The MLP hidden
	// (and the im2col scratch before the first layer) is never live at the
	// same time as any of them, so one buffer holds all: 16 MB less for
	// ViT-H/14's image pass of 4, 8 MB for its text pass of 8.
	// The float32 products read the MLP hidden in place at gemm.Stride(M)
	// (ViT-H/14's M = 5120 would otherwise be copied to a padded stride
	// for every second product); the bf16 ones pack it themselves.
	t.mlpLD = t.M
	if !t.mlpDense {
		t.mlpLD = gemm.Stride(t.M)
	}
	work := make([]float32, max(3*R*t.H, R*t.mlpLD, n*t.colsPer))
	t.qkv, t.mlp = work, work
	t.k, t.v = t.qkv[:R*t.H], t.qkv[R*t.H:2*R*t.H]
	t.scores = make([]float32, workers*t.T*scoreStride(t.T))
	t.pooled = make([]float32, n*t.H)
	t.pooledLN = make([]float32, n*t.H)
	t.aux = make([]float32, workers*t.M)
	t.at = make([]int, n)
	t.off = make([]int, n)
	t.lens = make([]int, n)
}

// images runs the vision tower on n ≤ fastImageChunk images into out [n, D].
func (f *fastCPU) images(out, pixels []float32, n int) {
	t, c := f.vis, f.m.Cfg.Vision
	t.reserve(n, f.pool.Threads())
	T, H, P, G, S := t.T, t.H, c.Patch, c.Grid(), c.ImageSize
	K := 3 * P * P // im2col row: (channel, ky, kx), the conv weight's column order
	np := n * G * G
	cols := t.mlp[:np*K] // [n·G², 3·P·P]
	emb := t.h[:np*H]    // [n·G², H]
	f.pool.Parallel(np, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b, g := r/(G*G), r%(G*G)
			gy, gx := g/G, g%G
			dst := cols[r*K : (r+1)*K]
			for ch := 0; ch < 3; ch++ {
				for ky := 0; ky < P; ky++ {
					src := pixels[((b*3+ch)*S+gy*P+ky)*S+gx*P:]
					copy(dst[(ch*P+ky)*P:(ch*P+ky+1)*P], src[:P])
				}
			}
		}
	})
	f.linear(emb, cols, np, &f.patch, nil)
	// x[b, 0] = cls + pos[0]; x[b, 1+p] = emb[b, p] + pos[1+p]; then pre-LN.
	pos, cls := f.m.Vision.Pos, f.m.Vision.Cls
	vw := f.m.Vision
	f.pool.Parallel(n*T, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b, tok := r/T, r%T
			row := t.x[r*H : (r+1)*H]
			if tok == 0 {
				fastAdd(row, cls, pos[:H])
			} else {
				fastAdd(row, emb[(b*G*G+tok-1)*H:(b*G*G+tok)*H], pos[tok*H:(tok+1)*H])
			}
			fastLayerNorm(row, row, vw.PreW, vw.PreB, t.eps)
		}
	})
	for b := 0; b < n; b++ { // every token; pool the class token
		t.off[b], t.lens[b], t.at[b] = b*T, T, 0
	}
	t.rows = n * T
	f.encode(t, n)
	f.finish(t, out, n)
}

// texts runs the text tower on n ≤ fastTextChunk sequences into out [n, D].
func (f *fastCPU) texts(out []float32, ids []int32, n int) {
	t := f.txt
	t.reserve(n, f.pool.Threads())
	T, H := t.T, t.H
	tw := f.m.Text
	R := 0
	for b := 0; b < n; b++ { // tokens up to the pooled one
		t.at[b] = fastPoolIndex(ids[b*T:(b+1)*T], f.m.Cfg.Text.EOS)
		t.off[b], t.lens[b] = R, t.at[b]+1
		R += t.lens[b]
	}
	t.rows = R
	f.pool.Parallel(n, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			for j := 0; j < t.lens[b]; j++ {
				row := t.x[(t.off[b]+j)*H : (t.off[b]+j+1)*H]
				emb := tw.Tok.RowInto(int(ids[b*T+j]), row)
				fastAdd(row, emb, tw.Pos[j*H:(j+1)*H])
			}
		}
	})
	f.encode(t, n)
	f.finish(t, out, n)
}

// fastPoolIndex is where HF pools a token sequence: the first EOS, or for the
// legacy eos_token_id 2 the first position of the largest id.
func fastPoolIndex(seq []int32, eos int32) int {
	best := 0
	for i, id := range seq {
		if eos == 2 {
			if id > seq[best] {
				best = i
			}
		} else if id == eos {
			return i
		}
	}
	return best
}

// finish applies the final LayerNorm to the pooled rows [n, H] and projects
// them into out [n, D].
func (f *fastCPU) finish(t *fastTower, out []float32, n int) {
	H := t.H
	for b := 0; b < n; b++ {
		fastLayerNorm(t.pooledLN[b*H:(b+1)*H], t.pooled[b*H:(b+1)*H], t.finW, t.finB, t.eps)
	}
	f.linear(out, t.pooledLN[:n*H], n, &t.proj, nil)
}

// encode runs the encoder layers on the residual stream t.x [R, H] and
// leaves in t.pooled [n, H] the output rows the tower pools (token at[b] of
// sequence b). The last layer computes only what those rows need: keys and
// values of every token, the rest for the pooled rows alone.
func (f *fastCPU) encode(t *fastTower, n int) {
	L := len(t.layers)
	for i := 0; i < L-1; i++ {
		f.layer(t, &t.layers[i], n)
	}
	f.lastLayer(t, &t.layers[L-1], n)
}

// lastLayer is layer restricted to the pooled rows: with xp = x[at] [n, H],
//
//	h = LN1(x); k, v = h·Wkᵀ+bk, h·Wvᵀ+bv (all rows); qp = h[at]·Wqᵀ + bq
//	xp += attention(qp, k, v)·Woᵀ + bo; xp += act(LN2(xp)·W1ᵀ + b1)·W2ᵀ + b2
func (f *fastCPU) lastLayer(t *fastTower, l *fastLayer, n int) {
	p := f.pool
	T, H, M, A := t.T, t.H, t.M, t.A
	R, d := t.rows, H/A
	x, h, k, v := t.x[:R*H], t.h[:R*H], t.k[:R*H], t.v[:R*H]
	xp, hp := t.pooled[:n*H], t.pooledLN[:n*H]
	qp, mlp := t.qp[:n*H], t.mlp[:n*M]
	ctx := h[:n*H] // free once k, v and the pooled rows of h are taken

	p.Parallel(R, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			fastLayerNorm(h[r*H:(r+1)*H], x[r*H:(r+1)*H], l.ln1W, l.ln1B, t.eps)
		}
	})
	f.linear(k, h, R, &l.k, l.kB)
	f.linear(v, h, R, &l.v, l.vB)
	for b := 0; b < n; b++ {
		r := t.off[b] + t.at[b]
		copy(xp[b*H:(b+1)*H], x[r*H:(r+1)*H])
		copy(hp[b*H:(b+1)*H], h[r*H:(r+1)*H])
	}
	f.linear(qp, hp, n, &l.q, l.qB)
	scale := float32(1 / math.Sqrt(float64(d)))
	p.ShareWorkers(n*A, func(w *gemm.Worker, lo, hi int) {
		s := t.scores[w.ID()*T*scoreStride(T) : w.ID()*T*scoreStride(T)+T]
		for i := lo; i < hi; i++ {
			b, a := i/A, i%A
			// The pooled row attends to the whole kept sequence: all tokens
			// for an image, those up to and including itself for a prompt.
			keys := t.lens[b]
			kv := t.off[b]*H + a*d
			w.MatMul(s, T, qp[b*H+a*d:], H, k[kv:], H, 1, keys, d, true, scale)
			fastSoftmax(s[:keys])
			w.MatMul(ctx[b*H+a*d:], H, s, T, v[kv:], H, 1, d, keys, false, 1)
		}
	})
	f.linear(hp, ctx, n, &l.o, l.oB)
	vek32.Add_Inplace(xp, hp)
	for b := 0; b < n; b++ {
		fastLayerNorm(hp[b*H:(b+1)*H], xp[b*H:(b+1)*H], l.ln2W, l.ln2B, t.eps)
	}
	f.linear(mlp, hp, n, &l.fc1, l.fc1B)
	f.activate(t, mlp, M, n)
	f.linear(hp, mlp, n, &l.fc2, l.fc2B)
	vek32.Add_Inplace(xp, hp)
}

// activate applies the tower's activation to R rows of M values of the
// MLP hidden, row stride ld.
func (f *fastCPU) activate(t *fastTower, mlp []float32, ld, R int) {
	M := t.M
	if t.quick {
		f.pool.ShareWorkers(R, func(w *gemm.Worker, lo, hi int) {
			aux := t.aux[w.ID()*M : (w.ID()+1)*M]
			for r := lo; r < hi; r++ {
				fastQuickGELU(mlp[r*ld:r*ld+M], aux)
			}
		})
		return
	}
	// Rows and the padding between them in one run (the padding holds
	// whatever the shared buffer last held, and nothing reads it).
	f.pool.Parallel(R, func(lo, hi int) { fastGELU(mlp[lo*ld : (hi-1)*ld+M]) })
}

// layer is one pre-LN encoder layer, in place on t.x [R, H]:
//
//	h = LN1(x); q, k, v = h·Wqᵀ+bq, …; x += attention(q, k, v)·Woᵀ + bo
//	h = LN2(x); x += act(h·W1ᵀ + b1)·W2ᵀ + b2
func (f *fastCPU) layer(t *fastTower, l *fastLayer, n int) {
	p := f.pool
	R, H := t.rows, t.H
	x, h := t.x[:R*H], t.h[:R*H]

	p.Parallel(R, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			fastLayerNorm(h[r*H:(r+1)*H], x[r*H:(r+1)*H], l.ln1W, l.ln1B, t.eps)
		}
	})
	switch {
	case l.q.bf == nil:
		// One product: qkv [R, 3H] holds q, k and v side by side.
		qkv := t.qkv[:3*R*H]
		f.warmF32(&l.q, &l.k, &l.v)
		p.LinearStack(qkv, h, R, l.qkv, l.qkvB)
		f.attention(t, h, qkv, qkv[H:], qkv[2*H:], 3*H, n) // context [R, H] into h
	case l.qkvBF != nil:
		qkv := t.qkv[:3*R*H]
		p.LinearBF16(qkv, h, R, l.qkvBF, l.qkvB)
		f.attention(t, h, qkv, qkv[H:], qkv[2*H:], 3*H, n)
	default:
		q, k, v := t.qkv[2*R*H:3*R*H], t.qkv[:R*H], t.qkv[R*H:2*R*H]
		f.linear(q, h, R, &l.q, l.qB)
		f.linear(k, h, R, &l.k, l.kB)
		f.linear(v, h, R, &l.v, l.vB)
		f.attention(t, h, q, k, v, H, n)
	}
	o := t.qkv[:R*H] // q, k and v are spent
	f.linear(o, h, R, &l.o, l.oB)
	fastAddRows(p, x, o, R, H)

	p.Parallel(R, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			fastLayerNorm(h[r*H:(r+1)*H], x[r*H:(r+1)*H], l.ln2W, l.ln2B, t.eps)
		}
	})
	// The MLP's output replaces its input in h; the hidden has row
	// stride ld. All R rows run at once: in two row blocks, as bf16 once
	// did to halve the hidden buffer and the second product's packed A
	// (5 MB each for ViT-H/14's image pass of 4), the bf16 image pass was
	// 2-3% slower (each block streams the MLP's weights once more and
	// runs smaller products).
	ld := t.mlpLD
	mlp := t.mlp[:R*ld]
	f.linearStrided(mlp, ld, h, H, R, &l.fc1, l.fc1B)
	f.activate(t, mlp, ld, R)
	f.linearStrided(h, H, mlp, ld, R, &l.fc2, l.fc2B)
	fastAddRows(p, x, h, R, H)
}

// fastAddRows does x += y over R rows of width H on the pool.
func fastAddRows(p *gemm.Pool, x, y []float32, R, H int) {
	p.Parallel(R, func(lo, hi int) { vek32.Add_Inplace(x[lo*H:hi*H], y[lo*H:hi*H]) })
}

// attention writes softmax(q·kᵀ/√d [+ causal mask])·v into ctx [R, H], one
// (sequence, head) pair per task; q, k, v are [R, H] with row stride ld
// and head a in columns [a·d, (a+1)·d).
func (f *fastCPU) attention(t *fastTower, ctx, q, k, v []float32, ld, n int) {
	T, H, A := t.T, t.H, t.A // T bounds every sequence's length L
	d := H / A
	scale := float32(1 / math.Sqrt(float64(d)))
	f.pool.ShareWorkers(n*A, func(w *gemm.Worker, lo, hi int) {
		s := t.scores[w.ID()*T*scoreStride(T) : (w.ID()+1)*T*scoreStride(T)]
		for i := lo; i < hi; i++ {
			b, a := i/A, i%A
			L, in, off := t.lens[b], t.off[b]*ld+a*d, t.off[b]*H+a*d
			if i+1 < hi { // the next pair's values into L2 while this one computes (attention.go)
				b1, a1 := (i+1)/A, (i+1)%A
				prefetchHead(v[t.off[b1]*ld+a1*d:], t.lens[b1], ld, d)
			}
			// ctx_a [L, d] = softmax(scale · q_a · k_aᵀ [+ mask]) · v_a (attention.go)
			attendHead(w, ctx[off:], H, q[in:], k[in:], v[in:], ld, L, d, t.causal, scale, s)
		}
	})
}
