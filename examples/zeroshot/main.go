// Command zeroshot sorts the photos of a folder into labels you choose, with
// no training: CLIP embeds every photo and the prompt "a photo of a LABEL"
// for each label, and each photo goes to the label whose prompt is closest.
// It uses the model face every clipidx command uses (clipnpu.Model).
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
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clipidx/clipidx/clipnpu"
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
	return clipnpu.DefaultDir()
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
	m, err := clipnpu.Open(*model, clipnpu.OpenOptions{Options: clipnpu.Options{Device: *device}})
	if err != nil {
		return fmt.Errorf("%w (run `clipidx model pull` or pass -model)", err)
	}
	defer m.Close()
	// The labels' prompts are embedded once.
	zs, err := m.NewZeroShot(labels, *template)
	if err != nil {
		return err
	}
	paths, err := images(folder)
	if err != nil {
		return err
	}
	dim := m.Info().Dim
	for start := 0; start < len(paths); start += max(*batch, 1) {
		chunk := paths[start:min(start+max(*batch, 1), len(paths))]
		img, err := m.EncodeImageFiles(chunk, false)
		if err != nil {
			// One file is bad: embed the chunk's photos one by one.
			img = nil
			var ok []string
			for _, p := range chunk {
				v, err := m.EncodeImageFiles([]string{p}, false)
				if err != nil {
					fmt.Fprintln(stderr, "skip:", err)
					continue
				}
				ok, img = append(ok, p), append(img, v...)
			}
			chunk = ok
		}
		for i, p := range chunk {
			row := zs.Probabilities(img[i*dim : (i+1)*dim])
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

// best returns the indices of the k largest values, largest first (ties:
// the earlier label).
func best(x []float64, k int) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
	return idx[:min(max(k, 1), len(idx))]
}
