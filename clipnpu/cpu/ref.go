package cpu

import (
	"fmt"
	"math"
	"runtime" // The reference forward: Hugging Face CLIPModel's get_image_features and
	// get_text_features, transcribed as plain loops. It is the oracle every
	// faster path is tested against, so it favours clarity over speed: dot
	// products and LayerNorm statistics accumulate in float64, and only rows of
	// work are split across goroutines.
	//
	// Legend for the shapes in comments (clipnpu/core's):
	//
	//	Tok  vision tokens (257 = 16·16 patches + class token for ViT-H/14)
	//	T    text context (77)
	//	H    tower width          M    MLP width (4·H)
	//	nh   heads                hd   head width H/nh
	//	P    patch edge (14)      G    patches per edge (16)
	//	D    projection dim

	"github.com/clipidx/clipidx/clipnpu/core"
)

// RefBackend runs the reference forward on the CPU.
type RefBackend struct {
	m       *core.Model
	threads int
	closed  bool
}

func NewReference(m *core.Model, threads int) *RefBackend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &RefBackend{m: m, threads: threads}
}

func (b *RefBackend) Info() core.Info { return b.m.Describe(core.DeviceReference) }
func (b *RefBackend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.m.Close()
}

// EncodeImages embeds pixels float32 [n, 3, S, S] → [n, D], one image at a
// time (so an embedding cannot depend on its batch).
func (b *RefBackend) EncodeImages(pixels []float32, n int) ([]float32, error) {
	if b.closed {
		return nil, core.ErrClosed
	}
	if b.m.Vision == nil {
		return nil, fmt.Errorf("encode images: %w (loaded with the text tower only)", core.ErrNoTower)
	}
	S := b.m.Cfg.Vision.ImageSize
	per := 3 * S * S
	if err := core.CheckBatch(len(pixels), n, per, "pixel values"); err != nil {
		return nil, err
	}
	D := b.m.Cfg.ProjectionDim
	out := make([]float32, n*D)
	for i := 0; i < n; i++ {
		visionForward(b.m, b.threads, pixels[i*per:(i+1)*per], out[i*D:(i+1)*D])
	}
	return out, nil
}

// EncodeTexts embeds ids int32 [n, T] → [n, D], one sequence at a time.
func (b *RefBackend) EncodeTexts(ids []int32, n int) ([]float32, error) {
	if b.closed {
		return nil, core.ErrClosed
	}
	if b.m.Text == nil {
		return nil, fmt.Errorf("encode texts: %w (loaded with the image tower only)", core.ErrNoTower)
	}
	T := b.m.Cfg.Text.Context
	if err := core.CheckBatch(len(ids), n, T, "token ids"); err != nil {
		return nil, err
	}
	if err := core.CheckIDs(ids, b.m.Cfg.Text.Vocab); err != nil {
		return nil, err
	}
	D := b.m.Cfg.ProjectionDim
	out := make([]float32, n*D)
	for i := 0; i < n; i++ {
		textForward(b.m, b.threads, ids[i*T:(i+1)*T], out[i*D:(i+1)*D])
	}
	return out, nil
}

// visionForward embeds one image px [3, S, S] into out [D].
func visionForward(m *core.Model, threads int, px []float32, out []float32) {
	c, w := m.Cfg.Vision, m.Vision
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
	core.Linear(emb, patches, G*G, &w.Patch, nil, threads)

	// Tokens: class token then patches, plus position embeddings. x [Tok, H]
	x := make([]float32, Tok*H)
	for j := 0; j < H; j++ {
		x[j] = w.Cls[j] + w.Pos[j]
	}
	for p := 0; p < G*G; p++ {
		for j := 0; j < H; j++ {
			x[(p+1)*H+j] = emb[p*H+j] + w.Pos[(p+1)*H+j]
		}
	}
	core.LayerNorm(x, x, Tok, H, w.PreW, w.PreB, c.LayerNormEps)

	for i := range w.Layers {
		refEncoderLayer(x, Tok, H, c.Heads, c.MLP, c.Act, c.LayerNormEps, false, &w.Layers[i], threads)
	}

	// Pool the class token: post_layernorm(x[0]) [H], then project to [D].
	pooled := make([]float32, H)
	core.LayerNorm(pooled, x[:H], 1, H, w.PostW, w.PostB, c.LayerNormEps)
	core.Linear(out, pooled, 1, &w.Proj, nil, threads)
}

// textForward embeds one token sequence ids [T] into out [D].
func textForward(m *core.Model, threads int, ids []int32, out []float32) {
	c, w := m.Cfg.Text, m.Text
	H, T := c.Hidden, c.Context

	// x [T, H] = token_embedding[ids] + position_embedding
	x := make([]float32, T*H)
	buf := make([]float32, H)
	for t, id := range ids {
		tok := w.Tok.RowInto(int(id), buf)
		for j := 0; j < H; j++ {
			x[t*H+j] = tok[j] + w.Pos[t*H+j]
		}
	}
	for i := range w.Layers {
		refEncoderLayer(x, T, H, c.Heads, c.MLP, c.Act, c.LayerNormEps, true, &w.Layers[i], threads)
	}
	core.LayerNorm(x, x, T, H, w.FinalW, w.FinalB, c.LayerNormEps)

	e := EOSPosition(ids, c.EOS)
	core.Linear(out, x[e*H:(e+1)*H], 1, &w.Proj, nil, threads)
}

// EOSPosition is where HF's CLIPTextTransformer pools: for the legacy
// eos_token_id 2, the position of the largest id (the first, as torch's
// argmax); otherwise the first position holding eos, or 0 when there is none
// (again as argmax of an all-false mask gives).
func EOSPosition(ids []int32, eos int32) int {
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
func refEncoderLayer(x []float32, L, H, nh, M int, act string, eps float32, causal bool, lw *core.LayerWeights, threads int) {
	h := make([]float32, L*H) // [L, H]
	core.LayerNorm(h, x, L, H, lw.LN1W, lw.LN1B, eps)

	q := make([]float32, L*H) // [L, H], heads side by side: column hi·hd+e
	k := make([]float32, L*H)
	v := make([]float32, L*H)
	core.Linear(q, h, L, &lw.Q, lw.QB, threads)
	core.Linear(k, h, L, &lw.K, lw.KB, threads)
	core.Linear(v, h, L, &lw.V, lw.VB, threads)

	attn := make([]float32, L*H) // [L, H]
	refAttention(attn, q, k, v, L, H, nh, causal, threads)

	o := make([]float32, L*H)
	core.Linear(o, attn, L, &lw.O, lw.OB, threads)
	for i := range x {
		x[i] += o[i]
	}

	core.LayerNorm(h, x, L, H, lw.LN2W, lw.LN2B, eps)
	f := make([]float32, L*M) // [L, M]
	core.Linear(f, h, L, &lw.FC1, lw.FC1B, threads)
	core.Activate(f, act)
	core.Linear(o, f, L, &lw.FC2, lw.FC2B, threads)
	for i := range x {
		x[i] += o[i]
	}
}

// refAttention computes softmax(q·kᵀ·hd^-0.5 [+ causal mask])·v per head.
// q, k, v, out [L, H]; head hi owns columns [hi·hd, (hi+1)·hd).
func refAttention(out, q, k, v []float32, L, H, nh int, causal bool, threads int) {
	hd := H / nh
	scale := 1 / math.Sqrt(float64(hd))
	core.Parallel(nh*L, threads, func(lo, hi int) {
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
				p[s] = core.Dot64(qt, k[s*H+off:s*H+off+hd]) * scale
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

// Model returns the weights the backend runs (for tests that inspect how
// they are held).
func (b *RefBackend) Model() *core.Model { return b.m }
