package main

// Opening the --model folder from the global flags (--model, --device,
// --threads, --weights), with errors that say what to do next.

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/tokenizer"
)

// openFace opens the --model folder with the global flags (--device,
// --threads, --weights), loading the towers asked for now, or with lazy
// when something needs them. Errors say what to do next.
func openFace(towers clipnpu.Towers, lazy bool) (*clipnpu.Model, error) {
	return clipnpu.Open(g.model, clipnpu.OpenOptions{Options: modelOptions(towers), Lazy: lazy, Explain: explainModel})
}

// precisionWhy says how --precision auto was resolved ("" when the
// precision was given).
var precisionWhy string

// modelOptions are the load options the global flags give. Every command
// that runs the model gets them here, so this is where the CPU's kernels
// are chosen (measured the first time on this CPU, read from the user's
// cache after) and --precision auto is resolved; the resolved precision
// replaces "auto" in g.precision, which the build records.
func modelOptions(towers clipnpu.Towers) clipnpu.Options {
	if modelOnCPU() {
		chooseKernels()
	}
	if g.precision == "auto" {
		g.precision, precisionWhy = resolvePrecision(g.precision)
	}
	return clipnpu.Options{Device: g.device, Threads: g.threads, Towers: towers, Weights: g.weights, Precision: g.precision, PackCache: packCacheDir()}
}

// explainModel words an error of loading the model folder with what to do
// next.
func explainModel(what string, err error) error {
	switch {
	case what == "tokenizer":
		if errors.Is(err, tokenizer.ErrNoVocab) {
			return fmt.Errorf("%w\n%s", err, noModelHint())
		}
		return err
	case what != "model":
		return err
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

// openModel loads the --model folder as one Backend with opts (from
// modelOptions), for the commands that drive an engine directly (bench
// model).
func openModel(opts clipnpu.Options) (clipnpu.Backend, error) {
	b, err := clipnpu.Load(g.model, opts)
	if err != nil {
		return nil, explainModel("model", err)
	}
	return b, nil
}
