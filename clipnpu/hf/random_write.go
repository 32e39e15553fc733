package hf

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"unsafe"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// WriteRandom writes NewRandom's weights for (cfg, seed, dt) as a Hugging
// Face CLIP folder in dir: config.json (naming the model cfg.Name) and
// model.safetensors with every tensor under its HF name, dtype dt for the
// matrices and F32 for the vectors, as transformers saves them. It is the
// stand-in for a real checkpoint of the same shape when measuring loading
// and memory (a ViT-H/14 in f32 is 3.9 GB, as laion's). No tokenizer or
// preprocessing files are written. Files are written under temporary names
// and renamed, so an interrupted call leaves no half-written model. Each
// tensor is generated just before it is written and released after, so
// memory stays near the largest tensor, not the model.
func WriteRandom(dir string, cfg core.Config, seed uint64, dt string, threads int) error {
	d, err := RandomDtype(cfg, dt)
	if err != nil {
		return err
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m, g := plannedRandomModel(cfg, seed, d, core.BothTowers)
	ts := NamedTensors(m)
	m = nil // ts and g.jobs now hold the only references to the weights
	// Keyed by address, not pointer: a pointer key would keep every
	// tensor alive to the end.
	job := map[uintptr]int{}
	for i := range g.jobs {
		if p := jobData(g.jobs[i].f32, g.jobs[i].u16); p != 0 {
			job[p] = i
		}
	}
	var sinceGC int
	fill := func(t *namedTensor) {
		if i, ok := job[jobData(t.f32, t.u16)]; ok {
			g.fillJobs(threads, g.jobs[i:i+1])
		}
	}
	release := func(t *namedTensor) {
		if i, ok := job[jobData(t.f32, t.u16)]; ok {
			g.jobs[i].f32, g.jobs[i].u16 = nil, nil
		}
		sinceGC += t.byteLen()
		t.f32, t.u16 = nil, nil
		if sinceGC >= 256<<20 {
			debug.FreeOSMemory() // a GC, then the freed tensors go back to the system
			sinceGC = 0
		}
	}
	cfgJSON, err := json.MarshalIndent(ConfigDoc(cfg), "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "config.json"), func(w *bufio.Writer) error {
		_, err := w.Write(append(cfgJSON, '\n'))
		return err
	}); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "model.safetensors"), func(w *bufio.Writer) error {
		return writeSafetensors(w, ts, fill, release)
	})
}

// jobData identifies a tensor's storage by the address of its first
// element (0 when empty).
func jobData(f []float32, u []uint16) uintptr {
	switch {
	case len(f) > 0:
		return uintptr(unsafe.Pointer(&f[0]))
	case len(u) > 0:
		return uintptr(unsafe.Pointer(&u[0]))
	}
	return 0
}

// writeAtomic writes path through a temporary file in its folder, synced
// and renamed into place.
func writeAtomic(path string, fill func(*bufio.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp makes 0600; a model is for every user
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// ConfigDoc is cfg as a transformers CLIPConfig document.
func ConfigDoc(c core.Config) map[string]any {
	return map[string]any{
		"_name_or_path":  c.Name,
		"architectures":  []string{"CLIPModel"},
		"model_type":     "clip",
		"projection_dim": c.ProjectionDim,
		"vision_config": map[string]any{
			"hidden_size": c.Vision.Hidden, "intermediate_size": c.Vision.MLP, "num_hidden_layers": c.Vision.Layers,
			"num_attention_heads": c.Vision.Heads, "patch_size": c.Vision.Patch, "image_size": c.Vision.ImageSize,
			"hidden_act": c.Vision.Act, "layer_norm_eps": c.Vision.LayerNormEps,
		},
		"text_config": map[string]any{
			"hidden_size": c.Text.Hidden, "intermediate_size": c.Text.MLP, "num_hidden_layers": c.Text.Layers,
			"num_attention_heads": c.Text.Heads, "vocab_size": c.Text.Vocab, "max_position_embeddings": c.Text.Context,
			"hidden_act": c.Text.Act, "layer_norm_eps": c.Text.LayerNormEps, "eos_token_id": c.Text.EOS,
		},
	}
}

// namedTensor is one tensor to save: float32 values or 16-bit patterns.
type namedTensor struct {
	Name  string
	Dtype core.Dtype
	Shape []int
	f32   []float32
	u16   []uint16
}

// NamedTensors lists the model's weights under their Hugging Face names.
func NamedTensors(m *core.Model) []namedTensor {
	var ts []namedTensor
	vec := func(name string, v []float32, shape ...int) {
		if shape == nil {
			shape = []int{len(v)}
		}
		ts = append(ts, namedTensor{Name: name, Dtype: core.F32, Shape: shape, f32: v})
	}
	mat := func(name string, t core.Tensor, shape ...int) {
		if shape == nil {
			shape = []int{t.Rows, t.Cols}
		}
		ts = append(ts, namedTensor{Name: name, Dtype: t.Dtype, Shape: shape, f32: t.F32, u16: t.U16})
	}
	layers := func(prefix string, ls []core.LayerWeights) {
		for i, l := range ls {
			p := fmt.Sprintf("%s.encoder.layers.%d.", prefix, i)
			vec(p+"layer_norm1.weight", l.LN1W)
			vec(p+"layer_norm1.bias", l.LN1B)
			vec(p+"layer_norm2.weight", l.LN2W)
			vec(p+"layer_norm2.bias", l.LN2B)
			mat(p+"self_attn.q_proj.weight", l.Q)
			vec(p+"self_attn.q_proj.bias", l.QB)
			mat(p+"self_attn.k_proj.weight", l.K)
			vec(p+"self_attn.k_proj.bias", l.KB)
			mat(p+"self_attn.v_proj.weight", l.V)
			vec(p+"self_attn.v_proj.bias", l.VB)
			mat(p+"self_attn.out_proj.weight", l.O)
			vec(p+"self_attn.out_proj.bias", l.OB)
			mat(p+"mlp.fc1.weight", l.FC1)
			vec(p+"mlp.fc1.bias", l.FC1B)
			mat(p+"mlp.fc2.weight", l.FC2)
			vec(p+"mlp.fc2.bias", l.FC2B)
		}
	}
	c := m.Cfg
	vec("logit_scale", []float32{float32(math.Log(float64(m.LogitScale)))}, []int{}...)
	if v := m.Vision; v != nil {
		P := c.Vision.Patch
		mat("vision_model.embeddings.patch_embedding.weight", v.Patch, c.Vision.Hidden, 3, P, P)
		vec("vision_model.embeddings.class_embedding", v.Cls)
		vec("vision_model.embeddings.position_embedding.weight", v.Pos, c.Vision.Tokens(), c.Vision.Hidden)
		vec("vision_model.pre_layrnorm.weight", v.PreW)
		vec("vision_model.pre_layrnorm.bias", v.PreB)
		layers("vision_model", v.Layers)
		vec("vision_model.post_layernorm.weight", v.PostW)
		vec("vision_model.post_layernorm.bias", v.PostB)
		mat("visual_projection.weight", v.Proj)
	}
	if t := m.Text; t != nil {
		mat("text_model.embeddings.token_embedding.weight", t.Tok)
		vec("text_model.embeddings.position_embedding.weight", t.Pos, c.Text.Context, c.Text.Hidden)
		layers("text_model", t.Layers)
		vec("text_model.final_layer_norm.weight", t.FinalW)
		vec("text_model.final_layer_norm.bias", t.FinalB)
		mat("text_projection.weight", t.Proj)
	}
	return ts
}

// byteLen is the tensor's size in the file.
func (t *namedTensor) byteLen() int {
	if t.Dtype == core.F32 {
		return 4 * len(t.f32)
	}
	return 2 * len(t.u16)
}

// writeSafetensors writes ts (sorted by name, data in that order) as a
// safetensors file, the header padded with spaces to a multiple of 8 bytes
// so every tensor starts aligned. before and after, when set, are called
// around the writing of each tensor's data (to generate and drop it).
func writeSafetensors(w *bufio.Writer, ts []namedTensor, before, after func(*namedTensor)) error {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for i := range ts {
		t := &ts[i]
		dt := map[core.Dtype]string{core.F32: "F32", core.F16: "F16", core.BF16: "BF16"}[t.Dtype]
		hdr[t.Name] = map[string]any{"dtype": dt, "shape": t.Shape, "data_offsets": []int{off, off + t.byteLen()}}
		off += t.byteLen()
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	if r := len(js) % 8; r != 0 {
		js = append(js, strings.Repeat(" ", 8-r)...)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(js)))
	w.Write(n[:])
	w.Write(js)
	for i := range ts {
		if before != nil {
			before(&ts[i])
		}
		if err := WriteElems(w, &ts[i]); err != nil {
			return err
		}
		if after != nil {
			after(&ts[i])
		}
	}
	return nil
}

// WriteElems writes t's elements little-endian.
func WriteElems(w *bufio.Writer, t *namedTensor) error {
	if core.LittleEndian {
		var b []byte
		switch {
		case t.Dtype == core.F32 && len(t.f32) > 0:
			b = unsafe.Slice((*byte)(unsafe.Pointer(&t.f32[0])), 4*len(t.f32))
		case len(t.u16) > 0:
			b = unsafe.Slice((*byte)(unsafe.Pointer(&t.u16[0])), 2*len(t.u16))
		}
		_, err := w.Write(b)
		return err
	}
	var buf [4]byte
	for _, x := range t.f32 {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
		if _, err := w.Write(buf[:]); err != nil {
			return err
		}
	}
	for _, x := range t.u16 {
		binary.LittleEndian.PutUint16(buf[:2], x)
		if _, err := w.Write(buf[:2]); err != nil {
			return err
		}
	}
	return nil
}
