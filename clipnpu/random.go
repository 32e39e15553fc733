package clipnpu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"

	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/internal/madedirs"
)

// NewRandom builds a model of cfg's shape with seeded random weights held in
// memory (for `clipidx bench model --random` and tests): matrices uniform
// with the scale of 1/sqrt(fan-in), embeddings ±0.02-ish, LayerNorm weights
// near 1, small biases, logit scale 100. dtype is "f32", "f16" or "bf16"
// (the matrices' storage). Only opts.Towers' towers are allocated. The same
// seed and config give the same weights on any machine and thread count.
func NewRandom(cfg Config, seed uint64, dt string, opts Options) (Backend, error) {
	if opts.Weights != "" && opts.Weights != "stored" {
		return nil, fmt.Errorf("clipnpu: random model: Options.Weights %q: the dtype argument chooses the storage", opts.Weights)
	}
	d, err := hf.RandomDtype(cfg, dt)
	if err != nil {
		return nil, err
	}
	switch opts.Device {
	case "", "auto", "cpu", "reference":
	case "npu":
		return nil, fmt.Errorf("random weights run on the CPU only: %w", ErrNoDevice)
	default:
		return nil, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	m := hf.RandomModel(cfg, seed, d, opts.Towers, threads)
	return cpuBackend(m, opts)
}

// WriteRandom writes a Hugging Face folder of random weights (see
// hf.WriteRandom), all or nothing (see WriteRandomContext).
func WriteRandom(dir string, cfg Config, seed uint64, dt string, threads int) error {
	return WriteRandomContext(context.Background(), dir, cfg, seed, dt, threads)
}

// randomStaging prefixes the hidden folder in which WriteRandomContext
// writes, inside the destination, so that one removal undoes a run.
const randomStaging = ".random-model.tmp-"

// WriteRandomContext writes config.json and model.safetensors of random
// weights (hf.WriteRandom) into dir, creating it when missing. Both are
// written in a hidden folder inside dir (.random-model.tmp-N) and moved
// into dir once complete; an existing config.json or model.safetensors is
// never replaced (the call fails).
//
// When the write fails or ctx is done, it removes everything it created:
// the hidden folder, and dir and its parents when it made them. It then
// returns the error (ctx's when stopped) at once; the generator, which
// takes no context, runs on until its next file operation fails in the
// removed folder (at worst the end of the model), so a caller that goes
// on should expect that work in the background; the CLI exits.
func WriteRandomContext(ctx context.Context, dir string, cfg Config, seed uint64, dt string, threads int) error {
	if _, err := hf.RandomDtype(cfg, dt); err != nil {
		return err
	}
	made, err := madedirs.MkdirAll(dir)
	if err != nil {
		removeMade(made)
		return err
	}
	stage, err := os.MkdirTemp(dir, randomStaging)
	if err != nil {
		removeMade(made)
		return err
	}
	undo := func(err error) error {
		if rerr := removeStage(stage); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return errors.Join(err, removeMade(made))
	}
	if err := ctx.Err(); err != nil {
		return undo(err)
	}
	done := make(chan error, 1)
	go func() { done <- hf.WriteRandom(stage, cfg, seed, dt, threads) }()
	select {
	case <-ctx.Done():
		return undo(ctx.Err())
	case err = <-done:
	}
	if err != nil {
		// hf's error names the hidden folder, about to go: name the file
		// it was writing (config.json is written first) in dir instead.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		name := "config.json"
		if _, serr := os.Stat(filepath.Join(stage, name)); serr == nil {
			name = "model.safetensors"
		}
		return undo(fmt.Errorf("write %s: %w", filepath.Join(dir, name), err))
	}
	var moved []string
	for _, name := range []string{"config.json", "model.safetensors"} {
		dst := filepath.Join(dir, name)
		if err := moveNew(filepath.Join(stage, name), dst); err != nil {
			for _, m := range moved {
				os.Remove(m)
			}
			return undo(err)
		}
		moved = append(moved, dst)
	}
	if err := os.Remove(stage); err != nil {
		return err
	}
	return syncFolder(dir)
}

// moveNew renames src to dst, failing when dst exists.
func moveNew(src, dst string) error {
	err := os.Link(src, dst)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists already: a model is never overwritten; choose a new or empty folder", dst)
	}
	if err == nil {
		return os.Remove(src)
	}
	// No hard links here (FAT, some network filesystems): rename, after
	// a check.
	if _, serr := os.Lstat(dst); serr == nil {
		return fmt.Errorf("%s exists already: a model is never overwritten; choose a new or empty folder", dst)
	}
	return os.Rename(src, dst)
}

// removeStage removes a staging folder while the generator may still
// create a file in it (hf.WriteRandom's second one): once the folder is
// gone, the generator's file operations fail. (A generator stopped in its
// first microseconds may yet make the folder again, empty: RandomLeftovers
// knows it.)
func removeStage(stage string) error {
	var err error
	for range 10 {
		if err = os.RemoveAll(stage); err == nil {
			return nil
		}
	}
	return fmt.Errorf("could not remove %s, written by this run: %w", stage, err)
}

// removeMade removes the folders mkdirAll made, innermost first.
func removeMade(made []string) error {
	var err error
	for i := len(made) - 1; i >= 0; i-- {
		if rerr := os.Remove(made[i]); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("could not remove the folder %s, made by this run: %w", made[i], rerr))
		}
	}
	return err
}

// syncFolder makes the new names in dir durable.
func syncFolder(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// randomTemp names what a killed WriteRandom leaves in its destination:
// its hidden folder, or (written by hf.WriteRandom directly, as before
// the hidden folder) a temporary file.
var randomTemp = regexp.MustCompile(`^(\.random-model\.tmp-[0-9]+|\.(config\.json|model\.safetensors)\.tmp[0-9]+)$`)

// RandomLeftovers sorts the entries of dir: what a killed WriteRandom
// left there (its hidden folder holding nothing but its own files, or
// hf.WriteRandom's temporary files), which can be removed (os.RemoveAll),
// and the others. Both are names in dir; a missing dir has none.
func RandomLeftovers(dir string) (leftovers, others []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		ok, err := randomLeftover(dir, e)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			leftovers = append(leftovers, e.Name())
		} else {
			others = append(others, e.Name())
		}
	}
	return leftovers, others, nil
}

// randomLeftover tells whether e in dir is a leftover of a killed
// WriteRandom: a temporary file, or the hidden folder holding only
// temporary files, config.json and model.safetensors.
func randomLeftover(dir string, e fs.DirEntry) (bool, error) {
	m := randomTemp.FindStringSubmatch(e.Name())
	switch {
	case m == nil:
		return false, nil
	case m[2] != "":
		return e.Type().IsRegular(), nil
	case !e.IsDir():
		return false, nil
	}
	inner, err := os.ReadDir(filepath.Join(dir, e.Name()))
	if err != nil {
		return false, err
	}
	for _, f := range inner {
		n := f.Name()
		fm := randomTemp.FindStringSubmatch(n)
		if !f.Type().IsRegular() || n != "config.json" && n != "model.safetensors" && (fm == nil || fm[2] == "") {
			return false, nil
		}
	}
	return true, nil
}
