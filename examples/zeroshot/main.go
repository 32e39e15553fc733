// Command zeroshot sorts the photos of a folder into labels you choose, with
// no training: CLIP embeds every photo and the prompt "a photo of a LABEL"
// for each label, and each photo goes to the label whose prompt is closest.
// It uses the public packages directly: tokenizer, preprocess and clipnpu.
//
//	go run ./examples/zeroshot ~/Pictures/2024 cat dog "a beach at sunset" "a birthday cake"
//	go run ./examples/zeroshot -top 3 -template "{}" -model DIR folder label...
//
// Each photo prints one tab-separated line: its path, then the -top best
// labels each followed by its probability (softmax over the labels of
// logit_scale × cosine). The model folder is the one `clipidx model pull`
// fills (-model, or $CLIPIDX_MODEL).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/tokenizer"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "zeroshot:", err)
		os.Exit(1)
	}
}

func defaultModel() string {
	if d := os.Getenv("CLIPIDX_MODEL"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "clipidx", "models", "laion", "CLIP-ViT-H-14-laion2B-s32B-b79K")
}

func run(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zeroshot", flag.ContinueOnError)
	fl.SetOutput(stderr)
	model := fl.String("model", defaultModel(), "model folder (Hugging Face CLIP layout)")
	device := fl.String("device", "auto", "auto, cpu, reference or npu")
	template := fl.String("template", "", `prompt with "{}" where the label goes (default: the model's, "a photo of a {}")`)
	top := fl.Int("top", 1, "labels printed per photo")
	batch := fl.Int("batch", 8, "photos per forward pass")
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: zeroshot [flags] FOLDER LABEL LABEL...")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() < 3 {
		fl.Usage()
		return errors.New("need a folder and at least two labels")
	}
	folder, labels := fl.Arg(0), fl.Args()[1:]

	tok, err := tokenizer.Load(*model)
	if err != nil {
		return fmt.Errorf("%w (run `clipidx model pull` or pass -model)", err)
	}
	cfg, err := preprocess.LoadConfig(*model)
	if err != nil {
		return err
	}
	proc := preprocess.New(cfg, preprocess.Options{})
	be, err := clipnpu.Load(*model, clipnpu.Options{Device: *device})
	if err != nil {
		return err
	}
	defer be.Close()
	info := be.Info()

	// The labels' text embeddings, L2-normalised: [L, D].
	tmpl := *template
	if tmpl == "" {
		tmpl = info.PromptTemplate
	}
	prompts := make([]string, len(labels))
	for i, l := range labels {
		prompts[i] = strings.ReplaceAll(tmpl, "{}", l)
	}
	txt, err := be.EncodeTexts(tok.EncodeBatch(prompts), len(prompts))
	if err != nil {
		return err
	}
	clipnpu.Normalize(txt, info.Dim)

	paths, err := images(folder)
	if err != nil {
		return err
	}
	for start := 0; start < len(paths); start += max(*batch, 1) {
		chunk := paths[start:min(start+max(*batch, 1), len(paths))]
		ok, pixels := decode(proc, chunk, stderr)
		if len(ok) == 0 {
			continue
		}
		img, err := be.EncodeImages(pixels, len(ok))
		if err != nil {
			return err
		}
		clipnpu.Normalize(img, info.Dim)
		// logits [n, L] = logit_scale · cosine; softmax over the labels.
		logits := clipnpu.Logits(img, txt, len(ok), len(labels), info.Dim, info.LogitScale)
		for i, p := range ok {
			row := softmax(logits[i*len(labels) : (i+1)*len(labels)])
			fmt.Fprint(stdout, p)
			for _, j := range best(row, *top) {
				fmt.Fprintf(stdout, "\t%s\t%.4f", labels[j], row[j])
			}
			fmt.Fprintln(stdout)
		}
	}
	return nil
}

// images lists the image files under folder, sorted, by extension.
func images(folder string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(folder, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff":
			if d.Type().IsRegular() {
				out = append(out, p)
			}
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// decode preprocesses paths on all cores; files that fail are reported on
// stderr and left out. It returns the paths that worked and their pixels,
// [n, 3, H, W] in the same order.
func decode(proc *preprocess.Processor, paths []string, stderr io.Writer) ([]string, []float32) {
	px := make([][]float32, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			px[i], errs[i] = proc.File(p)
		}()
	}
	wg.Wait()
	var ok []string
	var pixels []float32
	for i, p := range paths {
		if errs[i] != nil {
			fmt.Fprintln(stderr, "skip:", errs[i])
			continue
		}
		ok = append(ok, p)
		pixels = append(pixels, px[i]...)
	}
	return ok, pixels
}

func softmax(x []float32) []float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	out := make([]float32, len(x))
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		out[i] = float32(e)
		sum += e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / sum)
	}
	return out
}

// best returns the indices of the k largest values, largest first (ties:
// the earlier label).
func best(x []float32, k int) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
	return idx[:min(max(k, 1), len(idx))]
}
