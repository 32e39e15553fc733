package clipnpu

// The model face: what every command, the web server and the examples
// share to turn texts and image files into the vectors an index stores.
// The engines below (core, hf, cpu, npu) take tensors and ids; this file
// adds the folder's tokenizer and image preprocessing, a description of
// where its vectors come from (the index makes its identity from it), and
// lazy loading.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/tokenizer"
)

// OpenOptions configures Open. The zero value loads both towers at once on
// the automatic device.
type OpenOptions struct {
	Options
	// Lazy identifies the model now (Identify: config.json and the
	// safetensors header) and loads a tower only when something needs it,
	// so a caller with nothing to embed pays no load. Folders that cannot
	// be identified alone (bundles, device "npu") load at once.
	Lazy bool
	// Explain, when set, rewords an error of loading the model ("model"),
	// the tokenizer ("tokenizer") or the preprocessing ("preprocess") of
	// the folder, for instance to say which flag to use next.
	Explain func(what string, err error) error
}

// Model is an opened model folder: the towers (loaded now or on first use,
// see OpenOptions.Lazy), its tokenizer (read on first use) and its image
// preprocessing. Its methods are safe for concurrent use; model runs are
// serialised.
type Model struct {
	dir  string
	opts OpenOptions

	mu       sync.Mutex
	info     Info    // what Identify or the first load said
	img, txt Backend // the loaded towers (the same Backend when loaded together)
	tok      *tokenizer.Tokenizer
	procs    [2]*preprocess.Processor // [0] EXIF ignored, [1] applied
	pdone    bool                     // pcfg and perr are read
	pcfg     preprocess.Config
	perr     error
	// queryEXIF is the EXIF setting of the index the last Prepare was for.
	queryEXIF bool
}

// Open opens the model folder dir (Hugging Face layout or taconite bundle):
// its preprocessing at once, its towers now or, with Lazy, when first
// needed. Errors name the folder and wrap ErrNoModel, ErrBadModel or
// ErrNoDevice as Load's do.
func Open(dir string, o OpenOptions) (*Model, error) {
	m := &Model{dir: dir, opts: o}
	if o.Lazy {
		info, err := Identify(dir, o.Options)
		switch {
		case err == nil:
			m.info = info
		case errors.Is(err, ErrNotIdentifiable):
			if err := m.loadLocked(o.Towers); err != nil {
				return nil, err
			}
		default:
			return nil, m.explain("model", err)
		}
	} else if err := m.loadLocked(o.Towers); err != nil {
		return nil, err
	}
	if o.Towers.Image() {
		// Images will be embedded: a folder whose preprocessing is broken
		// or does not fit the model is refused before any work.
		if _, err := m.preprocessing(); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// preprocessing reads the folder's image preprocessing once and checks
// that its crop is the model's input.
func (m *Model) preprocessing() (preprocess.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pdone {
		return m.pcfg, m.perr
	}
	m.pdone = true
	cfg, err := PreprocessConfig(m.dir)
	switch {
	case err != nil:
		m.perr = m.explain("preprocess", fmt.Errorf("load image preprocessing: %w", err))
	case cfg.CropHeight != m.info.ImageSize || cfg.CropWidth != m.info.ImageSize:
		m.perr = fmt.Errorf("%s crops images to %dx%d but the model takes %dx%d",
			filepath.Join(m.dir, preprocess.ConfigFile), cfg.CropWidth, cfg.CropHeight, m.info.ImageSize, m.info.ImageSize)
	}
	m.pcfg = cfg
	return cfg, m.perr
}

func (m *Model) explain(what string, err error) error {
	if m.opts.Explain != nil {
		return m.opts.Explain(what, err)
	}
	return err
}

// Dir is the model folder.
func (m *Model) Dir() string { return m.dir }

// Info describes the model: what Identify said until a tower is loaded,
// then what the loaded backend says (device, how weights are held).
func (m *Model) Info() Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info
}

// Loaded reports whether a tower has been loaded.
func (m *Model) Loaded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img != nil || m.txt != nil
}

// Load loads the towers t (if they are not yet) and checks that they are
// the model that was identified.
func (m *Model) Load(t Towers) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadLocked(t)
}

func (m *Model) loadLocked(t Towers) error {
	needImg := t.Image() && m.img == nil
	needTxt := t.Text() && m.txt == nil
	if !needImg && !needTxt {
		return nil
	}
	load := t
	switch {
	case needImg && !needTxt:
		load = ImageTower
	case needTxt && !needImg:
		load = TextTower
	}
	opts := m.opts.Options
	opts.Towers = load
	b, err := loadModel(m.dir, opts)
	if err != nil {
		return m.explain("model", err)
	}
	info := b.Info()
	if m.info.Name != "" || m.info.WeightsHash != "" {
		if d := SameModel(m.info, info); d != "" {
			b.Close()
			return fmt.Errorf("load model: %s changed since it was identified: %s", m.dir, d)
		}
	}
	m.info = info
	if load.Image() {
		m.img = b
	}
	if load.Text() {
		m.txt = b
	}
	return nil
}

// Close releases the loaded towers.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	if m.img != nil {
		err = m.img.Close()
	}
	if m.txt != nil && m.txt != m.img {
		err = errors.Join(err, m.txt.Close())
	}
	m.img, m.txt = nil, nil
	return err
}

// Backend loads the towers t and returns the backend that runs them (both
// towers need them loaded together: Open without Lazy, or Load(BothTowers)
// first). For commands that drive the engines directly (check, bench).
func (m *Model) Backend(t Towers) (Backend, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.loadLocked(t); err != nil {
		return nil, err
	}
	switch {
	case t == ImageTower:
		return m.img, nil
	case t == TextTower:
		return m.txt, nil
	case m.img != m.txt:
		return nil, fmt.Errorf("clipnpu: the towers of %s were loaded apart; open it with both towers", m.dir)
	}
	return m.img, nil
}

// Description says where the model's vectors come from: the model, how
// its weights are held and the image pipeline. The index makes the
// identity it records from it; the face itself knows no index.
type Description struct {
	Name        string // the model's name (config.json, or the bundle's manifest)
	WeightsHash string // hash of the weights as stored; "" when unknown
	Arch        string // what of the config changes the vectors (core.Config.Arch); "" when unknown
	Weights     string // "" as stored, or the type float32 weights were rounded to at load ("f16")
	Dim         int    // the embedding dimension D
	// Preprocess is the preprocessing version and a hash of the folder's
	// config; "" when that config cannot be read (text-only use; Open
	// with the image tower refuses such a folder).
	Preprocess string
	EXIF       bool // images have their EXIF orientation applied
}

// Describe describes the model and its image pipeline, with EXIF
// orientation applied when exif is set.
func (m *Model) Describe(exif bool) Description {
	info := m.Info()
	pre := ""
	if pcfg, err := m.preprocessing(); err == nil {
		cfg, _ := json.Marshal(pcfg)
		pre = fmt.Sprintf("%s/%x", preprocess.Version, sha256.Sum256(cfg))[:len(preprocess.Version)+9]
	}
	return Description{
		Name:        info.Name,
		WeightsHash: info.WeightsHash,
		Arch:        info.Arch,
		Weights:     info.Rounded,
		Dim:         info.Dim,
		Preprocess:  pre,
		EXIF:        exif,
	}
}

// Prepare readies the model for a query: it loads the towers the query
// needs (text and/or image) and embeds later image files (EncodeImageFile)
// with the EXIF setting exif. A load, once started, runs to its end (the
// loaders take no context) and its tower is kept; ctx is checked before
// and after it. It is the Prepare of the search package's Encoder.
func (m *Model) Prepare(ctx context.Context, text, image, exif bool) error {
	t := BothTowers
	switch {
	case !text && !image:
		return nil
	case !image:
		t = TextTower
	case !text:
		t = ImageTower
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if image {
		// A preprocessing this clipidx cannot do leaves the identity's
		// preprocessing empty: say why, not that the index differs.
		if _, err := m.preprocessing(); err != nil {
			return err
		}
	}
	if err := m.Load(t); err != nil {
		return err
	}
	m.mu.Lock()
	m.queryEXIF = exif
	m.mu.Unlock()
	return ctx.Err()
}

// Processor is the folder's image preprocessing, applying the EXIF
// orientation when exif is set.
func (m *Model) Processor(exif bool) (*preprocess.Processor, error) {
	pcfg, err := m.preprocessing()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	if exif {
		i = 1
	}
	if m.procs[i] == nil {
		m.procs[i] = preprocess.New(pcfg, preprocess.Options{IgnoreEXIF: !exif})
	}
	return m.procs[i], nil
}

// Tokenizer is the folder's tokenizer, read on first use.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tok == nil {
		tok, err := tokenizer.Load(m.dir)
		if err != nil {
			return nil, m.explain("tokenizer", fmt.Errorf("load tokenizer: %w", err))
		}
		m.tok = tok
	}
	return m.tok, nil
}

// EncodeImages embeds n preprocessed images [n, 3, S, S] → [n, D], loading
// the image tower on first use. It implements index.Encoder.
func (m *Model) EncodeImages(pixels []float32, n int) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.loadLocked(ImageTower); err != nil {
		return nil, err
	}
	return m.img.EncodeImages(pixels, n)
}

// Tokenize turns texts into ids [n, T] with the folder's tokenizer.
func (m *Model) Tokenize(texts []string) ([]int32, error) {
	tok, err := m.Tokenizer()
	if err != nil {
		return nil, err
	}
	ids := tok.EncodeBatch(texts)
	if T := m.Info().Context; len(texts) > 0 && len(ids) != len(texts)*T {
		return nil, fmt.Errorf("the tokenizer gives %d ids per text, the model takes %d", len(ids)/len(texts), T)
	}
	return ids, nil
}

// EncodeTexts tokenizes and embeds texts → [n, D], loading the text tower
// on first use. It implements the search package's Encoder.
func (m *Model) EncodeTexts(texts []string) ([]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	ids, err := m.Tokenize(texts)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.loadLocked(TextTower); err != nil {
		return nil, err
	}
	v, err := m.txt.EncodeTexts(ids, len(texts))
	if err != nil {
		return nil, fmt.Errorf("encode texts: %w", err)
	}
	return v, nil
}

// defaultImageChunk bounds the activations of a CPU pass when the device
// names no pass size.
const defaultImageChunk = 8

// EncodeImageFiles preprocesses and embeds image files in passes of the
// device's size → [n, D] in order; an error names the file.
func (m *Model) EncodeImageFiles(paths []string, exif bool) ([]float32, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if err := m.Load(ImageTower); err != nil {
		return nil, err
	}
	info := m.Info()
	chunk := info.ImageBatch
	if chunk <= 0 {
		chunk = defaultImageChunk
	}
	p, err := m.Processor(exif)
	if err != nil {
		return nil, err
	}
	out := make([]float32, 0, len(paths)*info.Dim)
	for lo := 0; lo < len(paths); lo += chunk {
		hi := min(lo+chunk, len(paths))
		var px []float32
		for _, f := range paths[lo:hi] {
			v, err := p.File(f)
			if err != nil {
				return nil, err // names the file already
			}
			px = append(px, v...)
		}
		e, err := m.EncodeImages(px, hi-lo)
		if err != nil {
			return nil, fmt.Errorf("encode images: %w", err)
		}
		out = append(out, e...)
	}
	return out, nil
}

// EncodeImageFile embeds one image file with the EXIF setting of the last
// Prepare (before any: as stored) → [D], for the search package's Encoder.
func (m *Model) EncodeImageFile(path string) ([]float32, error) {
	return m.EncodeImageFiles([]string{path}, m.prepareEXIF())
}

func (m *Model) prepareEXIF() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.queryEXIF
}

// Prompt puts a label into the model's prompt template (template "" means
// the model's own, else DefaultPromptTemplate).
func (m *Model) Prompt(template, label string) string {
	if template == "" {
		template = m.Info().PromptTemplate
	}
	if template == "" {
		template = DefaultPromptTemplate
	}
	return FillTemplate(template, label)
}

// FillTemplate puts label into a prompt template's "{}".
func FillTemplate(template, label string) string {
	return strings.ReplaceAll(template, "{}", label)
}

// ZeroShot classifies image embeddings among labels: the labels' prompts
// embedded once, then for each image the softmax of its CLIP logits (HF's
// logits_per_image.softmax).
type ZeroShot struct {
	Labels []string
	text   []float32 // [labels, D]
	m      *Model
}

// NewZeroShot embeds one prompt per label (template as in Prompt).
func (m *Model) NewZeroShot(labels []string, template string) (*ZeroShot, error) {
	prompts := make([]string, len(labels))
	for i, l := range labels {
		prompts[i] = m.Prompt(template, l)
	}
	txt, err := m.EncodeTexts(prompts)
	if err != nil {
		return nil, err
	}
	return &ZeroShot{Labels: labels, text: txt, m: m}, nil
}

// Embeddings are the prompts' embeddings [labels, D], in label order, for
// a caller that checks them; they are shared, not to be changed.
func (z *ZeroShot) Embeddings() []float32 { return z.text }

// Probabilities returns the label probabilities of one image embedding.
func (z *ZeroShot) Probabilities(img []float32) []float64 {
	info := z.m.Info()
	return Softmax(Logits(img, z.text, 1, len(z.Labels), info.Dim, info.LogitScale))
}

// Softmax turns logits into probabilities (in float64, max-subtracted).
func Softmax(logits []float32) []float64 { return core.Softmax(logits) }

// PreprocessConfig is the image preprocessing of the model folder dir, the
// same for every command: its preprocessor_config.json, else (a taconite
// bundle) the bundle's preprocessing params, else the laion ViT-H/14
// defaults. A malformed preprocessor_config.json is an error, not a
// fallback.
func PreprocessConfig(dir string) (preprocess.Config, error) {
	cfg, err := preprocess.LoadConfig(dir)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return cfg, err
	}
	cfg = preprocess.DefaultConfig()
	if !bundle.HasManifest(dir) {
		return cfg, nil
	}
	b, err := bundle.Open(dir)
	if err != nil {
		return cfg, err
	}
	defer b.Close()
	if v, err := b.ParamInt("resize_shortest"); err == nil {
		cfg.ShortestEdge = v
	}
	if v, err := b.ParamInt("crop"); err == nil {
		cfg.CropHeight, cfg.CropWidth = v, v
	}
	if v, err := b.ParamFloats("mean"); err == nil && len(v) == 3 {
		cfg.Mean = [3]float32{float32(v[0]), float32(v[1]), float32(v[2])}
	}
	if v, err := b.ParamFloats("std"); err == nil && len(v) == 3 {
		cfg.Std = [3]float32{float32(v[0]), float32(v[1]), float32(v[2])}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s params: %w", filepath.Join(dir, bundle.ManifestFile), err)
	}
	return cfg, nil
}
