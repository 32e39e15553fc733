package clipnpu

// The reference forward: Hugging Face CLIPModel's get_image_features and
// get_text_features, transcribed as plain loops. It is the oracle every
// faster path is tested against, so it favours clarity over speed: dot
// products and LayerNorm statistics accumulate in float64, and only rows of
// work are split across goroutines.
//
// Legend for the shapes in comments:
//
//	Tok  vision tokens (257 = 16·16 patches + class token for ViT-H/14)
//	T    text context (77)
//	H    tower width          M    MLP width (4·H)
//	nh   heads                hd   head width H/nh
//	P    patch edge (14)      G    patches per edge (16)
//	D    projection dim

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// refBackend runs the reference forward on the CPU.
type refBackend struct {
	m       *model
	threads int
	closed  bool
}

func newReference(m *model, threads int) *refBackend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &refBackend{m: m, threads: threads}
}

func (b *refBackend) Info() Info { return b.m.info(DeviceReference) }
func (b *refBackend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.m.close()
}

// errClosed is returned by a backend used after Close.
var errClosed = errors.New("clipnpu: backend is closed")

// EncodeImages embeds pixels float32 [n, 3, S, S] → [n, D], one image at a
// time (so an embedding cannot depend on its batch).
func (b *refBackend) EncodeImages(pixels []float32, n int) ([]float32, error) {
	if b.closed {
		return nil, errClosed
	}
	if b.m.vision == nil {
		return nil, fmt.Errorf("encode images: %w (loaded with the text tower only)", ErrNoTower)
	}
	S := b.m.cfg.Vision.ImageSize
	per := 3 * S * S
	if err := checkBatch(len(pixels), n, per, "pixel values"); err != nil {
		return nil, err
	}
	D := b.m.cfg.ProjectionDim
	out := make([]float32, n*D)
	for i := 0; i < n; i++ {
		visionForward(b.m, b.threads, pixels[i*per:(i+1)*per], out[i*D:(i+1)*D])
	}
	return out, nil
}

// EncodeTexts embeds ids int32 [n, T] → [n, D], one sequence at a time.
func (b *refBackend) EncodeTexts(ids []int32, n int) ([]float32, error) {
	if b.closed {
		return nil, errClosed
	}
	if b.m.text == nil {
		return nil, fmt.Errorf("encode texts: %w (loaded with the image tower only)", ErrNoTower)
	}
	T := b.m.cfg.Text.Context
	if err := checkBatch(len(ids), n, T, "token ids"); err != nil {
		return nil, err
	}
	if err := checkIDs(ids, b.m.cfg.Text.Vocab); err != nil {
		return nil, err
	}
	D := b.m.cfg.ProjectionDim
	out := make([]float32, n*D)
	for i := 0; i < n; i++ {
		textForward(b.m, b.threads, ids[i*T:(i+1)*T], out[i*D:(i+1)*D])
	}
	return out, nil
}

// checkBatch enforces the Backend error contract on an input of length got
// holding n items of per values each.
func checkBatch(got, n, per int, what string) error {
	if n < 0 {
		return fmt.Errorf("clipnpu: negative batch size %d", n)
	}
	if got != n*per {
		return fmt.Errorf("clipnpu: %d %s for %d items, want %d (%d each)", got, what, n, n*per, per)
	}
	return nil
}

// checkIDs refuses token ids outside the vocabulary.
func checkIDs(ids []int32, vocab int) error {
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("clipnpu: token id %d at position %d outside the vocabulary of %d", id, i, vocab)
		}
	}
	return nil
}

// visionForward embeds one image px [3, S, S] into out [D].
func visionForward(m *model, threads int, px []float32, out []float32) {
	c, w := m.cfg.Vision, m.vision
	H, P, G, Tok := c.Hidden, c.Patch, c.Grid(), c.Tokens()
	S := c.ImageSize

	// Patch embedding, the stride-P conv as a GEMM: patches [G·G, 3·P·P]
	// with rows (py, px) and columns (channel, ky, kx), like the weight.
	K := 3 * P * P
	patches := make([]float32, G*G*K)
	for py := 0; py < G; py++ {
		for pxi := 0; pxi < G; pxi++ {
			row := patches[(py*G+pxi)*K:]
			for ch := 0; ch < 3; ch++ {
				for ky := 0; ky < P; ky++ {
					src := px[ch*S*S+(py*P+ky)*S+pxi*P:]
					copy(row[ch*P*P+ky*P:ch*P*P+ky*P+P], src[:P])
				}
			}
		}
	}
	emb := make([]float32, G*G*H) // [G·G, H]
	refLinear(emb, patches, G*G, &w.patch, nil, threads)

	// Tokens: class token then patches, plus position embeddings. x [Tok, H]
	x := make([]float32, Tok*H)
	for j := 0; j < H; j++ {
		x[j] = w.cls[j] + w.pos[j]
	}
	for p := 0; p < G*G; p++ {
		for j := 0; j < H; j++ {
			x[(p+1)*H+j] = emb[p*H+j] + w.pos[(p+1)*H+j]
		}
	}
	refLayerNorm(x, x, Tok, H, w.preW, w.preB, c.LayerNormEps)

	for i := range w.layers {
		refEncoderLayer(x, Tok, H, c.Heads, c.MLP, c.Act, c.LayerNormEps, false, &w.layers[i], threads)
	}

	// Pool the class token: post_layernorm(x[0]) [H], then project to [D].
	pooled := make([]float32, H)
	refLayerNorm(pooled, x[:H], 1, H, w.postW, w.postB, c.LayerNormEps)
	refLinear(out, pooled, 1, &w.proj, nil, threads)
}

// textForward embeds one token sequence ids [T] into out [D].
func textForward(m *model, threads int, ids []int32, out []float32) {
	c, w := m.cfg.Text, m.text
	H, T := c.Hidden, c.Context

	// x [T, H] = token_embedding[ids] + position_embedding
	x := make([]float32, T*H)
	buf := make([]float32, H)
	for t, id := range ids {
		tok := w.tok.rowInto(int(id), buf)
		for j := 0; j < H; j++ {
			x[t*H+j] = tok[j] + w.pos[t*H+j]
		}
	}
	for i := range w.layers {
		refEncoderLayer(x, T, H, c.Heads, c.MLP, c.Act, c.LayerNormEps, true, &w.layers[i], threads)
	}
	refLayerNorm(x, x, T, H, w.finalW, w.finalB, c.LayerNormEps)

	e := eosPosition(ids, c.EOS)
	refLinear(out, x[e*H:(e+1)*H], 1, &w.proj, nil, threads)
}

// eosPosition is where HF's CLIPTextTransformer pools: for the legacy
// eos_token_id 2, the position of the largest id (the first, as torch's
// argmax); otherwise the first position holding eos, or 0 when there is none
// (again as argmax of an all-false mask gives).
func eosPosition(ids []int32, eos int32) int {
	best := 0
	if eos == 2 {
		for t, id := range ids {
			if id > ids[best] {
				best = t
			}
		}
		return best
	}
	for t, id := range ids {
		if id == eos {
			return t
		}
	}
	return 0
}

// refEncoderLayer applies one pre-LN layer to x [L, H] in place:
//
//	x += out_proj(refAttention(layer_norm1(x)))
//	x += fc2(act(fc1(layer_norm2(x))))
func refEncoderLayer(x []float32, L, H, nh, M int, act string, eps float32, causal bool, lw *layerWeights, threads int) {
	h := make([]float32, L*H) // [L, H]
	refLayerNorm(h, x, L, H, lw.ln1W, lw.ln1B, eps)

	q := make([]float32, L*H) // [L, H], heads side by side: column hi·hd+e
	k := make([]float32, L*H)
	v := make([]float32, L*H)
	refLinear(q, h, L, &lw.q, lw.qB, threads)
	refLinear(k, h, L, &lw.k, lw.kB, threads)
	refLinear(v, h, L, &lw.v, lw.vB, threads)

	attn := make([]float32, L*H) // [L, H]
	refAttention(attn, q, k, v, L, H, nh, causal, threads)

	o := make([]float32, L*H)
	refLinear(o, attn, L, &lw.o, lw.oB, threads)
	for i := range x {
		x[i] += o[i]
	}

	refLayerNorm(h, x, L, H, lw.ln2W, lw.ln2B, eps)
	f := make([]float32, L*M) // [L, M]
	refLinear(f, h, L, &lw.fc1, lw.fc1B, threads)
	refActivate(f, act)
	refLinear(o, f, L, &lw.fc2, lw.fc2B, threads)
	for i := range x {
		x[i] += o[i]
	}
}

// refAttention computes softmax(q·kᵀ·hd^-0.5 [+ causal mask])·v per head.
// q, k, v, out [L, H]; head hi owns columns [hi·hd, (hi+1)·hd).
func refAttention(out, q, k, v []float32, L, H, nh int, causal bool, threads int) {
	hd := H / nh
	scale := 1 / math.Sqrt(float64(hd))
	parallel(nh*L, threads, func(lo, hi int) {
		p := make([]float64, L) // attention weights of one query row [L]
		for r := lo; r < hi; r++ {
			head, t := r/L, r%L
			off := head * hd
			qt := q[t*H+off : t*H+off+hd]
			n := L // keys visible to query t
			if causal {
				n = t + 1
			}
			maxS := math.Inf(-1)
			for s := 0; s < n; s++ {
				p[s] = dot64(qt, k[s*H+off:s*H+off+hd]) * scale
				maxS = math.Max(maxS, p[s])
			}
			var sum float64
			for s := 0; s < n; s++ {
				p[s] = math.Exp(p[s] - maxS)
				sum += p[s]
			}
			for e := 0; e < hd; e++ {
				var acc float64
				for s := 0; s < n; s++ {
					acc += p[s] * float64(v[s*H+off+e])
				}
				out[t*H+off+e] = float32(acc / sum)
			}
		}
	})
}

// refLinear computes y [m, w.rows] = x [m, w.cols] · wᵀ + bias (nn.Linear);
// bias may be nil. Output columns are split across goroutines; 16-bit
// weight rows are widened once per call.
func refLinear(y, x []float32, m int, w *tensor, bias []float32, threads int) {
	in, outN := w.cols, w.rows
	parallel(outN, threads, func(lo, hi int) {
		buf := make([]float32, in)
		for j := lo; j < hi; j++ {
			wj := w.rowInto(j, buf) // [in]
			var b float64
			if bias != nil {
				b = float64(bias[j])
			}
			for i := 0; i < m; i++ {
				y[i*outN+j] = float32(dot64(x[i*in:(i+1)*in], wj) + b)
			}
		}
	})
}

// dot64 is Σ a[i]·b[i] accumulated in float64.
func dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, av := range a {
		s += float64(av) * float64(b[i])
	}
	return s
}

// refLayerNorm normalises each of the m rows of x [m, n] into y (may alias x):
// (x − mean)/sqrt(var + eps)·w + b, biased variance as torch computes it.
func refLayerNorm(y, x []float32, m, n int, w, b []float32, eps float32) {
	for r := 0; r < m; r++ {
		row := x[r*n : (r+1)*n]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(n)
		var variance float64
		for _, v := range row {
			d := float64(v) - mean
			variance += d * d
		}
		variance /= float64(n)
		inv := 1 / math.Sqrt(variance+float64(eps))
		dst := y[r*n : (r+1)*n]
		for j, v := range row {
			dst[j] = float32((float64(v)-mean)*inv*float64(w[j]) + float64(b[j]))
		}
	}
}

// refActivate applies the MLP activation in place: "gelu" is the exact
// erf form, "quick_gelu" is x·sigmoid(1.702·x).
func refActivate(x []float32, act string) {
	switch act {
	case "quick_gelu":
		for i, v := range x {
			f := float64(v)
			x[i] = float32(f / (1 + math.Exp(-1.702*f)))
		}
	default: // "gelu"; Config.Validate refuses anything else
		for i, v := range x {
			f := float64(v)
			x[i] = float32(0.5 * f * (1 + math.Erf(f/math.Sqrt2)))
		}
	}
}

// parallel splits [0, n) into at most threads contiguous ranges and runs fn
// on each in its own goroutine.
func parallel(n, threads int, fn func(lo, hi int)) {
	if threads <= 1 || n < 2 {
		fn(0, n)
		return
	}
	if threads > n {
		threads = n
	}
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		lo, hi := i*n/threads, (i+1)*n/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}
