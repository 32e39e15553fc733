package hf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// LoadModel reads config.json and maps model.safetensors, checking every
// tensor of the requested towers.
func LoadModel(dir string, towers core.Towers, conv core.Dtype, threads int) (*core.Model, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "model.safetensors")
	fi, err := os.Stat(path) // before mapping: see weightsSource
	var mp *core.Mapping
	if err == nil {
		mp, err = core.MapFile(path)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, errMissing(path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	m, err := modelFromSafetensors(cfg, path, mp, towers, conv, threads)
	if err != nil {
		mp.Close()
		return nil, err
	}
	m.Source = weightsSource(fi)
	return m, nil
}

// weightsSource is core.Model.Source for the weights file's stat: its
// size, modification time in nanoseconds and inode (0 where the system
// has none). Any write gives the file a new modification time, so a file
// damaged and then copied back (whose sampled hash stays the same) is
// another source, and work kept for the damaged one is not used again.
// It is taken before the file is mapped: were the file replaced in
// between, work from the new bytes would be kept under the old version's
// name, which no later start sees, rather than old bytes under the new.
func weightsSource(fi os.FileInfo) string {
	return fmt.Sprintf("%d bytes, mtime %d, inode %d", fi.Size(), fi.ModTime().UnixNano(), fileIno(fi))
}

// modelFromSafetensors builds the model from a mapped safetensors file.
// conv other than keepStored rounds float32 matrices to that type (see
// convert.go); when every float32 byte the model uses was copied out, the
// mapping is released before returning.
func modelFromSafetensors(cfg core.Config, path string, mp *core.Mapping, towers core.Towers, conv core.Dtype, threads int) (*core.Model, error) {
	h, err := mappedHeader(path, mp.Data)
	if err != nil {
		return nil, err
	}
	ld := &stLoader{path: path, h: h, data: mp.Data, conv: conv, threads: threads, release: mp.Release}
	m := &core.Model{Cfg: cfg, Mapping: mp, Hash: memoWeightsHash(path, h, mp.Data)}
	if conv != KeepStored {
		// The hash faulted in pages all over the file; when the weights
		// are copied out, nothing of the mapping needs to stay resident.
		mp.Release(mp.Data)
	}

	ls, err := ld.vec("logit_scale", 1)
	if err != nil {
		return nil, err
	}
	m.LogitScale = float32(math.Exp(float64(ls[0])))
	if towers.Image() {
		if m.Vision, err = ld.vision(cfg); err != nil {
			return nil, err
		}
	}
	if towers.Text() {
		if m.Text, err = ld.textTower(cfg); err != nil {
			return nil, err
		}
	}
	m.Dtype = ld.dtype
	if ld.converted {
		// The hash stays the stored weights': rounding is how the model is
		// held, not another model (store.Identity.Compatible).
		m.Rounded, m.Dtype = true, conv
	}
	if ld.converted && !ld.viewed {
		// Every matrix and vector is a heap copy: the file's pages need
		// not stay mapped.
		m.Mapping = nil
		if err := mp.Close(); err != nil {
			return nil, fmt.Errorf("unmap %s: %w", path, err)
		}
	}
	return m, nil
}

// mappedHeader parses the header of a safetensors file held in data (the
// whole file), with errors naming path and wrapping ErrBadModel.
func mappedHeader(path string, data []byte) (*stHeader, error) {
	size := int64(len(data))
	n, err := headerLen(data, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	h, err := parseSafetensors(data[:8+n], size)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	return h, nil
}

// How much of the weights the identity hash reads: every tensor's first,
// middle and last tensorSample bytes (so a change to any one tensor, even a
// small projection, is seen), plus hashSampleCount blocks of hashBlock bytes
// spread evenly over the whole data. About 0.5 MB of a 3.9 GB ViT-H/14 file:
// cheap enough for every load, unlike hashing all of it.
const (
	tensorSample    = 256
	hashSampleCount = 64
	hashBlock       = 4096
)

// weightsHash is sha256 over the header bytes, the file size and samples of
// the tensor data (see hashSamples): it changes whenever a tensor's name,
// shape, dtype or extent does, and when fine-tuned or re-initialised values
// of the same shapes replace the old ones.
func weightsHash(h *stHeader, data []byte) string {
	hashRuns.Add(1)
	s := sha256.New()
	s.Write(h.Raw)
	var sz [8]byte
	binary.LittleEndian.PutUint64(sz[:], uint64(h.FileSize))
	s.Write(sz[:])
	names := make([]string, 0, len(h.Tensors))
	for name := range h.Tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := h.Tensors[name]
		if e.Begin >= 0 && e.End <= int64(len(data)) && e.Begin <= e.End {
			HashTensor(s, data[e.Begin:e.End])
		}
	}
	body := data[min(h.DataOff, int64(len(data))):]
	hashSamples(s, body)
	return hex.EncodeToString(s.Sum(nil))
}

// HashTensor writes a tensor's first, middle and last tensorSample bytes
// (all of a small one) into h.
func HashTensor(h io.Writer, t []byte) {
	if len(t) <= 3*tensorSample {
		h.Write(t)
		return
	}
	mid := len(t)/2 - tensorSample/2
	h.Write(t[:tensorSample])
	h.Write(t[mid : mid+tensorSample])
	h.Write(t[len(t)-tensorSample:])
}

// hashSamples writes into h the whole of data when it is small, else
// hashSampleCount blocks of hashBlock bytes spread evenly over it, the last
// one ending at its end.
func hashSamples(h io.Writer, data []byte) {
	if len(data) <= hashSampleCount*hashBlock {
		h.Write(data)
		return
	}
	step := (len(data) - hashBlock) / (hashSampleCount - 1)
	for i := 0; i < hashSampleCount; i++ {
		h.Write(data[i*step : i*step+hashBlock])
	}
}

// stLoader resolves HF tensor names to views of the mapping.
type stLoader struct {
	path  string
	h     *stHeader
	data  []byte
	dtype core.Dtype // dtype of the last matrix, reported as the model's

	conv      core.Dtype     // keepStored, or the type float32 matrices are rounded to
	threads   int            // goroutines for the rounding; 0 = GOMAXPROCS
	release   func(b []byte) // drops a converted tensor's pages from memory; may be nil
	converted bool           // some float32 tensor was rounded
	viewed    bool           // some matrix is a view of the mapping
}

func (l *stLoader) bad(name, format string, a ...any) error {
	return fmt.Errorf("%w: %s: tensor %s: %s", core.ErrBadModel, l.path, name, fmt.Sprintf(format, a...))
}

// entry finds name and checks its shape against want.
func (l *stLoader) entry(name string, want ...int) (stEntry, core.Dtype, error) {
	e, ok := l.h.Tensors[name]
	if !ok {
		return e, 0, fmt.Errorf("%w: %s: tensor %s is missing", core.ErrBadModel, l.path, name)
	}
	var dt core.Dtype
	switch e.Dtype {
	case "F32":
		dt = core.F32
	case "F16":
		dt = core.F16
	case "BF16":
		dt = core.BF16
	default:
		return e, 0, l.bad(name, "unsupported dtype %s (want F32, F16 or BF16)", e.Dtype)
	}
	if !sameShape(e.Shape, want) {
		return e, 0, l.bad(name, "shape %v, want %v", e.Shape, want)
	}
	return e, dt, nil
}

// sameShape compares shapes, treating a scalar [] like [1].
func sameShape(got, want []int) bool {
	if len(got) == 0 && len(want) == 1 && want[0] == 1 {
		return true
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// mat returns a matrix view [rows, cols]; shape is the checkpoint's shape
// (its product must be rows·cols).
func (l *stLoader) mat(name string, rows, cols int, shape ...int) (core.Tensor, error) {
	if shape == nil {
		shape = []int{rows, cols}
	}
	e, dt, err := l.entry(name, shape...)
	if err != nil {
		return core.Tensor{}, err
	}
	b := l.data[e.Begin:e.End]
	t := core.Tensor{Name: name, Rows: rows, Cols: cols, Dtype: dt}
	switch {
	case dt == core.F32 && l.conv != KeepStored:
		u, err := roundF32(core.F32View(b), l.conv, l.threads)
		if err != nil {
			// Not ErrBadModel: the checkpoint is fine as stored.
			return core.Tensor{}, fmt.Errorf("clipnpu: %s: tensor %s: %w", l.path, name, err)
		}
		t.Dtype, t.U16 = l.conv, u
		l.converted = true
		if l.release != nil {
			l.release(b)
		}
	case dt == core.F32:
		t.F32 = core.F32View(b)
		l.viewed = true
	default:
		t.U16 = core.U16View(b)
		l.viewed = true
	}
	l.dtype = t.Dtype
	return t, nil
}

// vec returns a float32 vector of n elements (a view for F32, a widened copy
// for 16-bit dtypes); shape defaults to [n].
func (l *stLoader) vec(name string, n int, shape ...int) ([]float32, error) {
	if shape == nil {
		shape = []int{n}
	}
	e, dt, err := l.entry(name, shape...)
	if err != nil {
		return nil, err
	}
	t := core.Tensor{Name: name, Rows: 1, Cols: n, Dtype: dt}
	if dt == core.F32 {
		t.F32 = core.F32View(l.data[e.Begin:e.End])
		if l.conv != KeepStored {
			// Vectors stay float32 but are copied, so the mapping can go.
			v := append([]float32(nil), t.F32...)
			if l.release != nil {
				l.release(l.data[e.Begin:e.End])
			}
			return v, nil
		}
		return t.F32, nil
	}
	t.U16 = core.U16View(l.data[e.Begin:e.End])
	return t.RowInto(0, make([]float32, n)), nil
}

// layers loads the encoder layers under prefix ("vision_model.encoder.layers").
func (l *stLoader) layers(prefix string, n, hid, mlp int) ([]core.LayerWeights, error) {
	out := make([]core.LayerWeights, n)
	for i := range out {
		p := fmt.Sprintf("%s.%d.", prefix, i)
		lw := &out[i]
		var err error
		vec := func(dst *[]float32, name string, size int) {
			if err == nil {
				*dst, err = l.vec(p+name, size)
			}
		}
		mat := func(dst *core.Tensor, name string, rows, cols int) {
			if err == nil {
				*dst, err = l.mat(p+name, rows, cols)
			}
		}
		vec(&lw.LN1W, "layer_norm1.weight", hid)
		vec(&lw.LN1B, "layer_norm1.bias", hid)
		mat(&lw.Q, "self_attn.q_proj.weight", hid, hid)
		vec(&lw.QB, "self_attn.q_proj.bias", hid)
		mat(&lw.K, "self_attn.k_proj.weight", hid, hid)
		vec(&lw.KB, "self_attn.k_proj.bias", hid)
		mat(&lw.V, "self_attn.v_proj.weight", hid, hid)
		vec(&lw.VB, "self_attn.v_proj.bias", hid)
		mat(&lw.O, "self_attn.out_proj.weight", hid, hid)
		vec(&lw.OB, "self_attn.out_proj.bias", hid)
		vec(&lw.LN2W, "layer_norm2.weight", hid)
		vec(&lw.LN2B, "layer_norm2.bias", hid)
		mat(&lw.FC1, "mlp.fc1.weight", mlp, hid)
		vec(&lw.FC1B, "mlp.fc1.bias", mlp)
		mat(&lw.FC2, "mlp.fc2.weight", hid, mlp)
		vec(&lw.FC2B, "mlp.fc2.bias", hid)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *stLoader) vision(cfg core.Config) (*core.VisionWeights, error) {
	v := cfg.Vision
	H, P, tok := v.Hidden, v.Patch, v.Tokens()
	w := &core.VisionWeights{}
	var err error
	step := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	const e = "vision_model.embeddings."
	step(func() (err error) { w.Patch, err = l.mat(e+"patch_embedding.weight", H, 3*P*P, H, 3, P, P); return })
	step(func() (err error) { w.Cls, err = l.vec(e+"class_embedding", H); return })
	step(func() (err error) { w.Pos, err = l.vec(e+"position_embedding.weight", tok*H, tok, H); return })
	step(func() (err error) { w.PreW, err = l.vec("vision_model.pre_layrnorm.weight", H); return })
	step(func() (err error) { w.PreB, err = l.vec("vision_model.pre_layrnorm.bias", H); return })
	step(func() (err error) {
		w.Layers, err = l.layers("vision_model.encoder.layers", v.Layers, H, v.MLP)
		return
	})
	step(func() (err error) { w.PostW, err = l.vec("vision_model.post_layernorm.weight", H); return })
	step(func() (err error) { w.PostB, err = l.vec("vision_model.post_layernorm.bias", H); return })
	step(func() (err error) { w.Proj, err = l.mat("visual_projection.weight", cfg.ProjectionDim, H); return })
	if err != nil {
		return nil, err
	}
	if _, ok := l.h.Tensors[fmt.Sprintf("vision_model.encoder.layers.%d.layer_norm1.weight", v.Layers)]; ok {
		return nil, fmt.Errorf("%w: %s has more vision layers than config.json's num_hidden_layers %d", core.ErrBadModel, l.path, v.Layers)
	}
	return w, nil
}

func (l *stLoader) textTower(cfg core.Config) (*core.TextWeights, error) {
	t := cfg.Text
	H := t.Hidden
	w := &core.TextWeights{}
	var err error
	step := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	const e = "text_model.embeddings."
	step(func() (err error) { w.Tok, err = l.mat(e+"token_embedding.weight", t.Vocab, H); return })
	step(func() (err error) {
		w.Pos, err = l.vec(e+"position_embedding.weight", t.Context*H, t.Context, H)
		return
	})
	step(func() (err error) {
		w.Layers, err = l.layers("text_model.encoder.layers", t.Layers, H, t.MLP)
		return
	})
	step(func() (err error) { w.FinalW, err = l.vec("text_model.final_layer_norm.weight", H); return })
	step(func() (err error) { w.FinalB, err = l.vec("text_model.final_layer_norm.bias", H); return })
	step(func() (err error) { w.Proj, err = l.mat("text_projection.weight", cfg.ProjectionDim, H); return })
	if err != nil {
		return nil, err
	}
	if _, ok := l.h.Tensors[fmt.Sprintf("text_model.encoder.layers.%d.layer_norm1.weight", t.Layers)]; ok {
		return nil, fmt.Errorf("%w: %s has more text layers than config.json's num_hidden_layers %d", core.ErrBadModel, l.path, t.Layers)
	}
	return w, nil
}
