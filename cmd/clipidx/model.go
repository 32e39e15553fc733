package main

// Shared helpers that open the model, its tokenizer and its image
// preprocessor from the global flags (--model, --device, --threads), with
// errors that say what to do next.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/tokenizer"
)

// openModel loads the --model folder on --device with --threads, mapping
// only the towers asked for. A missing or empty folder says where it looked
// and how to get a model.
func openModel(towers clipnpu.Towers) (clipnpu.Backend, error) {
	b, err := clipnpu.Load(g.model, modelOptions(towers))
	if err == nil {
		return b, nil
	}
	return nil, modelError(err)
}

// modelOptions are the load options the global flags give.
func modelOptions(towers clipnpu.Towers) clipnpu.Options {
	return clipnpu.Options{Device: g.device, Threads: g.threads, Towers: towers, Weights: g.weights}
}

// lazyModel is a model whose identity is known (clipnpu.Identify) but
// whose towers are loaded only when there is something to embed (load),
// so a build with nothing new costs no model load. Folders that cannot be
// identified without a full load (bundles, --device npu) are loaded at
// once.
type lazyModel struct {
	towers clipnpu.Towers
	info   clipnpu.Info    // what Identify (or the eager load) said
	b      clipnpu.Backend // nil until load
}

// openModelLazily identifies the --model folder, or loads it when it
// cannot be identified alone. Errors read as openModel's.
func openModelLazily(towers clipnpu.Towers) (*lazyModel, error) {
	info, err := clipnpu.Identify(g.model, modelOptions(towers))
	if err == nil {
		return &lazyModel{towers: towers, info: info}, nil
	}
	if !errors.Is(err, clipnpu.ErrNotIdentifiable) {
		return nil, modelError(err)
	}
	b, err := openModel(towers)
	if err != nil {
		return nil, err
	}
	return &lazyModel{towers: towers, info: b.Info(), b: b}, nil
}

// load loads the towers if they are not yet, and checks they are the model
// identified.
func (m *lazyModel) load() error {
	if m.b != nil {
		return nil
	}
	b, err := openModel(m.towers)
	if err != nil {
		return err
	}
	if d := clipnpu.SameModel(m.info, b.Info()); d != "" {
		b.Close()
		return fmt.Errorf("load model: %s changed since it was identified: %s", g.model, d)
	}
	m.info = b.Info()
	m.b = b
	return nil
}

// EncodeImages loads the model if needed and embeds the images.
func (m *lazyModel) EncodeImages(pixels []float32, n int) ([]float32, error) {
	if err := m.load(); err != nil {
		return nil, err
	}
	return m.b.EncodeImages(pixels, n)
}

// Close releases the model if it was loaded.
func (m *lazyModel) Close() error {
	if m.b == nil {
		return nil
	}
	return m.b.Close()
}

// modelError words a model load error with what to do next.
func modelError(err error) error {
	switch {
	case errors.Is(err, clipnpu.ErrNoModel):
		return fmt.Errorf("%w\n%s", err, noModelHint())
	case errors.Is(err, clipnpu.ErrNoDevice) && g.device == "npu":
		return fmt.Errorf("load model: %w (use --device cpu to run on the CPU)", err)
	}
	return fmt.Errorf("load model: %w", err)
}

// noModelHint tells the user how to get a model into g.model.
func noModelHint() string {
	if filepath.Clean(g.model) == filepath.Clean(defaultModelDir()) {
		return fmt.Sprintf("looked in the default model folder %s: run `clipidx model pull` to download %s there, or pass --model DIR (env CLIPIDX_MODEL)", g.model, defaultRepo)
	}
	return fmt.Sprintf("looked in %s (from --model or CLIPIDX_MODEL): pass a Hugging Face CLIP folder, or run `clipidx model pull` and drop --model", g.model)
}

// openTokenizer loads the tokenizer of the --model folder.
func openTokenizer() (*tokenizer.Tokenizer, error) {
	tok, err := tokenizer.Load(g.model)
	if err != nil {
		if errors.Is(err, tokenizer.ErrNoVocab) {
			return nil, fmt.Errorf("load tokenizer: %w\n%s", err, noModelHint())
		}
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	return tok, nil
}

// openPreprocessor builds the image preprocessor of the --model folder from
// its preprocessor_config.json, or the laion ViT-H/14 defaults when the
// folder has none (taconite bundles carry those values). exif false keeps
// the stored orientation, as Hugging Face does.
func openPreprocessor(exif bool) (*preprocess.Processor, error) {
	cfg, err := preprocess.LoadConfig(g.model)
	if errors.Is(err, fs.ErrNotExist) {
		cfg, err = preprocess.DefaultConfig(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("load image preprocessing: %w", err)
	}
	return preprocess.New(cfg, preprocess.Options{IgnoreEXIF: !exif}), nil
}

// checkImageSize refuses a preprocessor whose crop is not the model's input.
func checkImageSize(p *preprocess.Processor, info clipnpu.Info) error {
	c := p.Config()
	if c.CropHeight != info.ImageSize || c.CropWidth != info.ImageSize {
		return fmt.Errorf("%s crops images to %dx%d but the model takes %dx%d",
			filepath.Join(g.model, preprocess.ConfigFile), c.CropWidth, c.CropHeight, info.ImageSize, info.ImageSize)
	}
	return nil
}

// encodeImageFiles preprocesses and embeds files in chunks, returning
// [n, D] in order; errors name the file.
func encodeImageFiles(b clipnpu.Backend, p *preprocess.Processor, files []string) ([]float32, error) {
	info := b.Info()
	chunk := info.ImageBatch
	if chunk <= 0 {
		chunk = 8 // bounds the activations of a CPU pass
	}
	out := make([]float32, 0, len(files)*info.Dim)
	for lo := 0; lo < len(files); lo += chunk {
		hi := min(lo+chunk, len(files))
		var px []float32
		for _, f := range files[lo:hi] {
			v, err := p.File(f)
			if err != nil {
				return nil, err // names the file already
			}
			px = append(px, v...)
		}
		e, err := b.EncodeImages(px, hi-lo)
		if err != nil {
			return nil, fmt.Errorf("encode images: %w", err)
		}
		out = append(out, e...)
	}
	return out, nil
}

// encodeTexts tokenizes and embeds texts, returning ids [n, T] and [n, D].
func encodeTexts(b clipnpu.Backend, tok *tokenizer.Tokenizer, texts []string) ([]int32, []float32, error) {
	if len(texts) == 0 {
		return nil, nil, nil
	}
	ids := tok.EncodeBatch(texts)
	if T := b.Info().Context; len(ids) != len(texts)*T {
		return nil, nil, fmt.Errorf("the tokenizer gives %d ids per text, the model takes %d", len(ids)/len(texts), T)
	}
	e, err := b.EncodeTexts(ids, len(texts))
	if err != nil {
		return nil, nil, fmt.Errorf("encode texts: %w", err)
	}
	return ids, e, nil
}

// fillTemplate puts label into a prompt template's "{}".
func fillTemplate(template, label string) string {
	return strings.ReplaceAll(template, "{}", label)
}
