package clipnpu

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
	"strings"
)

// ErrNoModel is returned when the model folder does not exist or is empty.
var ErrNoModel = errors.New("clipnpu: no model")

// ErrBadModel is returned when a model folder is incomplete or malformed: a
// missing file, a missing or misshapen tensor, an unknown dtype, a truncated
// or corrupt safetensors file. The message names the file or tensor.
var ErrBadModel = errors.New("clipnpu: bad model")

// ErrNoTower is returned when a backend loaded with one tower only
// (Options.Towers) is asked to run the other.
var ErrNoTower = errors.New("clipnpu: tower not loaded")

// Towers selects which towers Load maps and checks.
type Towers uint8

const (
	BothTowers Towers = iota // the zero value: image and text
	ImageTower               // vision weights only
	TextTower                // text weights only; vision bytes are never read
)

func (t Towers) image() bool { return t == BothTowers || t == ImageTower }
func (t Towers) text() bool  { return t == BothTowers || t == TextTower }

// Options configures Load and NewRandom. The zero value picks the device
// automatically, uses every core and loads both towers.
type Options struct {
	// Device is "" or "auto" (for a taconite bundle the NPU when it can be
	// opened, else the bundle's kernels emulated on the CPU; for a Hugging
	// Face folder the CPU), "cpu" (the fast CPU path when compiled in, else
	// the reference; the emulated kernels for a bundle), "reference" (always
	// the plain reference forward; not for bundles) or "npu" (the NPU or an
	// error wrapping ErrNoDevice, never a fallback).
	Device string
	// Threads bounds the CPU goroutines; 0 means GOMAXPROCS.
	Threads int
	Towers  Towers
	// Weights is how a Hugging Face folder's float32 matrices are held:
	// "" or "stored" keeps them as stored (memory-mapped, 4 bytes a weight);
	// "f16" rounds them to binary16 at load (to nearest, ties to even) and
	// releases the mapping, halving the memory the model needs at the cost
	// of a rounding the conformance tests bound (see convert.go).
	// 16-bit checkpoints are always kept as stored. Not for bundles.
	Weights string
}

// Hooks filled in by other files of this package when their code is
// compiled in; nil means unavailable.
var (
	// openNPU opens dir on the NPU (set by npu_linux.go). It returns an
	// error wrapping ErrNoDevice when no NPU is usable.
	openNPU func(dir string, opts Options) (Backend, error)
	// newFastCPU wraps a loaded model in the fast CPU forward
	// (cpu_fast*.go). It takes ownership of m (closing it in Close).
	newFastCPU func(m *model, threads int) (Backend, error)
)

// Device names reported in Info.Device by the CPU backends.
const (
	DeviceReference = "cpu-reference"
	DeviceCPU       = "cpu"
	// DeviceEmulatedNPU is a taconite bundle replayed kernel for kernel on
	// the CPU (npu_emu.go): the bundle's bf16 and bfp16ebs8 numerics, so
	// its results are held to the NPU's bf16 bars, not float32 ones. Load
	// uses it for a bundle on Device "cpu", and on "auto" when no NPU is
	// usable; Info.DeviceNote then says why.
	DeviceEmulatedNPU = "cpu-emulated-npu"
)

// Load opens a model folder: a Hugging Face CLIP folder (config.json and
// model.safetensors), or a taconite NPU bundle (manifest.txt, tensors.txt,
// tensors.bin and no model.safetensors), which runs on the NPU or, slower,
// with its kernels emulated on the CPU (see Options.Device).
func Load(dir string, opts Options) (Backend, error) {
	if err := checkFolder(dir); err != nil {
		return nil, err
	}
	switch opts.Device {
	case "", "auto", "cpu", "reference", "npu":
	default:
		return nil, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	conv, err := parseWeights(opts.Weights)
	if err != nil {
		return nil, err
	}
	if IsBundle(dir) {
		if conv != keepStored {
			return nil, fmt.Errorf("%s is a taconite NPU bundle: weights %q applies to Hugging Face folders only (a bundle keeps its own formats)", dir, opts.Weights)
		}
		return loadBundle(dir, opts)
	}
	if opts.Device == "npu" {
		if conv != keepStored {
			return nil, fmt.Errorf("clipnpu: weights %q applies to the CPU (the NPU path converts the weights to its own formats)", opts.Weights)
		}
		if openNPU == nil {
			return nil, fmt.Errorf("this build has no NPU support: %w", ErrNoDevice)
		}
		return openNPU(dir, opts)
	}
	m, err := loadModel(dir, opts.Towers, conv, opts.Threads)
	if err != nil {
		return nil, err
	}
	return cpuBackend(m, opts)
}

// loadBundle routes a taconite bundle: the NPU for "npu" (or an error), the
// emulated kernels for "cpu", the NPU else the emulated kernels for auto.
// Only an error wrapping ErrNoDevice falls back; a damaged bundle is
// reported as it is.
func loadBundle(dir string, opts Options) (Backend, error) {
	switch opts.Device {
	case "reference":
		return nil, fmt.Errorf("%s is a taconite NPU bundle: the float32 reference forward reads only Hugging Face folders (config.json, model.safetensors); use device auto or cpu (kernels emulated on the CPU) or npu", dir)
	case "npu":
		if openNPU == nil {
			return nil, fmt.Errorf("this build has no NPU support: %w", ErrNoDevice)
		}
		return openNPU(dir, opts)
	case "cpu":
		return openEmulated(dir, opts, "device cpu: bundle kernels emulated on the CPU")
	}
	why := "this build has no NPU support"
	if openNPU != nil {
		b, err := openNPU(dir, opts)
		if err == nil || !errors.Is(err, ErrNoDevice) {
			return b, err
		}
		why = shortReason(err)
	}
	return openEmulated(dir, opts, "no usable NPU ("+why+"); bundle kernels emulated on the CPU")
}

// openEmulated replays the bundle on the emulated device, note (plus the
// numerics caveat) becoming Info.DeviceNote.
func openEmulated(dir string, opts Options, note string) (Backend, error) {
	dev := newEmuDevice(opts.Threads)
	dev.note = note + ", with the bf16 numerics clipnpu/NPU.md assumes (not hardware; slow)"
	return openBundle(dir, opts, dev)
}

// shortReason cuts an ErrNoDevice error down to its first one or two
// clauses, for a one-line note: "no NPU device node: /dev/accel/accel0 does
// not exist".
func shortReason(err error) string {
	s := err.Error()
	for _, p := range []string{ErrNoDevice.Error() + ": ", "xdna: "} {
		s = strings.TrimPrefix(s, p)
	}
	if i := strings.IndexAny(s, ";\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	parts := strings.SplitN(s, ": ", 3)
	s = parts[0]
	if len(parts) > 1 && len(parts[1]) <= 80 {
		s += ": " + parts[1]
	}
	return s
}

// cpuBackend wraps m in the fast CPU path when available, else the reference.
func cpuBackend(m *model, opts Options) (Backend, error) {
	if opts.Device != "reference" && newFastCPU != nil {
		b, err := newFastCPU(m, opts.Threads)
		if err != nil {
			m.close()
			return nil, err
		}
		return b, nil
	}
	return newReference(m, opts.Threads), nil
}

// IsBundle reports whether dir looks like a taconite bundle: its three
// bundle files and no model.safetensors (the test fixtures carry bundle-form
// reference records beside Hugging Face weights; those are HF folders).
func IsBundle(dir string) bool {
	for _, f := range []string{"manifest.txt", "tensors.txt", "tensors.bin"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	return errors.Is(err, os.ErrNotExist)
}

// checkFolder returns ErrNoModel for an absent or empty folder.
func checkFolder(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: folder %s does not exist", ErrNoModel, dir)
	}
	if err != nil {
		return fmt.Errorf("read model folder %s: %w", dir, err)
	}
	if len(ents) == 0 {
		return fmt.Errorf("%w: folder %s is empty", ErrNoModel, dir)
	}
	return nil
}

// loadModel reads config.json and maps model.safetensors, checking every
// tensor of the requested towers.
func loadModel(dir string, towers Towers, conv dtype, threads int) (*model, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "model.safetensors")
	mp, err := mapFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing", ErrBadModel, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	m, err := modelFromSafetensors(cfg, path, mp, towers, conv, threads)
	if err != nil {
		mp.close()
		return nil, err
	}
	return m, nil
}

// modelFromSafetensors builds the model from a mapped safetensors file.
// conv other than keepStored rounds float32 matrices to that type (see
// convert.go); when every float32 byte the model uses was copied out, the
// mapping is released before returning.
func modelFromSafetensors(cfg Config, path string, mp *mapping, towers Towers, conv dtype, threads int) (*model, error) {
	h, err := mappedHeader(path, mp.data)
	if err != nil {
		return nil, err
	}
	ld := &stLoader{path: path, h: h, data: mp.data, conv: conv, threads: threads, release: mp.release}
	m := &model{cfg: cfg, mapping: mp, hash: weightsHash(h, mp.data)}
	if conv != keepStored {
		// The hash faulted in pages all over the file; when the weights
		// are copied out, nothing of the mapping needs to stay resident.
		mp.release(mp.data)
	}

	ls, err := ld.vec("logit_scale", 1)
	if err != nil {
		return nil, err
	}
	m.logitScale = float32(math.Exp(float64(ls[0])))
	if towers.image() {
		if m.vision, err = ld.vision(cfg); err != nil {
			return nil, err
		}
	}
	if towers.text() {
		if m.text, err = ld.textTower(cfg); err != nil {
			return nil, err
		}
	}
	m.dtype = ld.dtype
	if ld.converted {
		// The identity changes with the rounding, so an index built with
		// the stored weights is not silently mixed with these vectors.
		m.rounded, m.dtype = true, conv
		m.hash = convertedHash(m.hash, conv)
	}
	if ld.converted && !ld.viewed {
		// Every matrix and vector is a heap copy: the file's pages need
		// not stay mapped.
		m.mapping = nil
		if err := mp.close(); err != nil {
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
		return nil, fmt.Errorf("%w: %s: %v", ErrBadModel, path, err)
	}
	h, err := parseSafetensors(data[:8+n], size)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadModel, path, err)
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
			hashTensor(s, data[e.Begin:e.End])
		}
	}
	body := data[min(h.DataOff, int64(len(data))):]
	hashSamples(s, body)
	return hex.EncodeToString(s.Sum(nil))
}

// hashTensor writes a tensor's first, middle and last tensorSample bytes
// (all of a small one) into h.
func hashTensor(h io.Writer, t []byte) {
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
	dtype dtype // dtype of the last matrix, reported as the model's

	conv      dtype          // keepStored, or the type float32 matrices are rounded to
	threads   int            // goroutines for the rounding; 0 = GOMAXPROCS
	release   func(b []byte) // drops a converted tensor's pages from memory; may be nil
	converted bool           // some float32 tensor was rounded
	viewed    bool           // some matrix is a view of the mapping
}

func (l *stLoader) bad(name, format string, a ...any) error {
	return fmt.Errorf("%w: %s: tensor %s: %s", ErrBadModel, l.path, name, fmt.Sprintf(format, a...))
}

// entry finds name and checks its shape against want.
func (l *stLoader) entry(name string, want ...int) (stEntry, dtype, error) {
	e, ok := l.h.Tensors[name]
	if !ok {
		return e, 0, fmt.Errorf("%w: %s: tensor %s is missing", ErrBadModel, l.path, name)
	}
	var dt dtype
	switch e.Dtype {
	case "F32":
		dt = dtF32
	case "F16":
		dt = dtF16
	case "BF16":
		dt = dtBF16
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
func (l *stLoader) mat(name string, rows, cols int, shape ...int) (tensor, error) {
	if shape == nil {
		shape = []int{rows, cols}
	}
	e, dt, err := l.entry(name, shape...)
	if err != nil {
		return tensor{}, err
	}
	b := l.data[e.Begin:e.End]
	t := tensor{name: name, rows: rows, cols: cols, dtype: dt}
	switch {
	case dt == dtF32 && l.conv != keepStored:
		u, err := roundF32(f32View(b), l.conv, l.threads)
		if err != nil {
			// Not ErrBadModel: the checkpoint is fine as stored.
			return tensor{}, fmt.Errorf("clipnpu: %s: tensor %s: %w", l.path, name, err)
		}
		t.dtype, t.u16 = l.conv, u
		l.converted = true
		if l.release != nil {
			l.release(b)
		}
	case dt == dtF32:
		t.f32 = f32View(b)
		l.viewed = true
	default:
		t.u16 = u16View(b)
		l.viewed = true
	}
	l.dtype = t.dtype
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
	t := tensor{name: name, rows: 1, cols: n, dtype: dt}
	if dt == dtF32 {
		t.f32 = f32View(l.data[e.Begin:e.End])
		if l.conv != keepStored {
			// Vectors stay float32 but are copied, so the mapping can go.
			v := append([]float32(nil), t.f32...)
			if l.release != nil {
				l.release(l.data[e.Begin:e.End])
			}
			return v, nil
		}
		return t.f32, nil
	}
	t.u16 = u16View(l.data[e.Begin:e.End])
	return t.rowInto(0, make([]float32, n)), nil
}

// layers loads the encoder layers under prefix ("vision_model.encoder.layers").
func (l *stLoader) layers(prefix string, n, hid, mlp int) ([]layerWeights, error) {
	out := make([]layerWeights, n)
	for i := range out {
		p := fmt.Sprintf("%s.%d.", prefix, i)
		lw := &out[i]
		var err error
		vec := func(dst *[]float32, name string, size int) {
			if err == nil {
				*dst, err = l.vec(p+name, size)
			}
		}
		mat := func(dst *tensor, name string, rows, cols int) {
			if err == nil {
				*dst, err = l.mat(p+name, rows, cols)
			}
		}
		vec(&lw.ln1W, "layer_norm1.weight", hid)
		vec(&lw.ln1B, "layer_norm1.bias", hid)
		mat(&lw.q, "self_attn.q_proj.weight", hid, hid)
		vec(&lw.qB, "self_attn.q_proj.bias", hid)
		mat(&lw.k, "self_attn.k_proj.weight", hid, hid)
		vec(&lw.kB, "self_attn.k_proj.bias", hid)
		mat(&lw.v, "self_attn.v_proj.weight", hid, hid)
		vec(&lw.vB, "self_attn.v_proj.bias", hid)
		mat(&lw.o, "self_attn.out_proj.weight", hid, hid)
		vec(&lw.oB, "self_attn.out_proj.bias", hid)
		vec(&lw.ln2W, "layer_norm2.weight", hid)
		vec(&lw.ln2B, "layer_norm2.bias", hid)
		mat(&lw.fc1, "mlp.fc1.weight", mlp, hid)
		vec(&lw.fc1B, "mlp.fc1.bias", mlp)
		mat(&lw.fc2, "mlp.fc2.weight", hid, mlp)
		vec(&lw.fc2B, "mlp.fc2.bias", hid)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *stLoader) vision(cfg Config) (*visionWeights, error) {
	v := cfg.Vision
	H, P, tok := v.Hidden, v.Patch, v.Tokens()
	w := &visionWeights{}
	var err error
	step := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	const e = "vision_model.embeddings."
	step(func() (err error) { w.patch, err = l.mat(e+"patch_embedding.weight", H, 3*P*P, H, 3, P, P); return })
	step(func() (err error) { w.cls, err = l.vec(e+"class_embedding", H); return })
	step(func() (err error) { w.pos, err = l.vec(e+"position_embedding.weight", tok*H, tok, H); return })
	step(func() (err error) { w.preW, err = l.vec("vision_model.pre_layrnorm.weight", H); return })
	step(func() (err error) { w.preB, err = l.vec("vision_model.pre_layrnorm.bias", H); return })
	step(func() (err error) {
		w.layers, err = l.layers("vision_model.encoder.layers", v.Layers, H, v.MLP)
		return
	})
	step(func() (err error) { w.postW, err = l.vec("vision_model.post_layernorm.weight", H); return })
	step(func() (err error) { w.postB, err = l.vec("vision_model.post_layernorm.bias", H); return })
	step(func() (err error) { w.proj, err = l.mat("visual_projection.weight", cfg.ProjectionDim, H); return })
	if err != nil {
		return nil, err
	}
	if _, ok := l.h.Tensors[fmt.Sprintf("vision_model.encoder.layers.%d.layer_norm1.weight", v.Layers)]; ok {
		return nil, fmt.Errorf("%w: %s has more vision layers than config.json's num_hidden_layers %d", ErrBadModel, l.path, v.Layers)
	}
	return w, nil
}

func (l *stLoader) textTower(cfg Config) (*textWeights, error) {
	t := cfg.Text
	H := t.Hidden
	w := &textWeights{}
	var err error
	step := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	const e = "text_model.embeddings."
	step(func() (err error) { w.tok, err = l.mat(e+"token_embedding.weight", t.Vocab, H); return })
	step(func() (err error) {
		w.pos, err = l.vec(e+"position_embedding.weight", t.Context*H, t.Context, H)
		return
	})
	step(func() (err error) {
		w.layers, err = l.layers("text_model.encoder.layers", t.Layers, H, t.MLP)
		return
	})
	step(func() (err error) { w.finalW, err = l.vec("text_model.final_layer_norm.weight", H); return })
	step(func() (err error) { w.finalB, err = l.vec("text_model.final_layer_norm.bias", H); return })
	step(func() (err error) { w.proj, err = l.mat("text_projection.weight", cfg.ProjectionDim, H); return })
	if err != nil {
		return nil, err
	}
	if _, ok := l.h.Tensors[fmt.Sprintf("text_model.encoder.layers.%d.layer_norm1.weight", t.Layers)]; ok {
		return nil, fmt.Errorf("%w: %s has more text layers than config.json's num_hidden_layers %d", ErrBadModel, l.path, t.Layers)
	}
	return w, nil
}
