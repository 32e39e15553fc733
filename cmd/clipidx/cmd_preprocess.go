package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/preprocess"
)

func init() { subcommands = append(subcommands, newPreprocessCmd) }

func newPreprocessCmd() *cobra.Command {
	var (
		out  string
		exif bool
	)
	c := &cobra.Command{
		Use:   "preprocess -o OUT.f32 IMAGE...",
		Short: "Write the model input tensors of images (for parity checks)",
		Long: `Decode each image and write the pixel values the model sees, in argument
order, as one little-endian float32 tensor [n, 3, H, W] (H and W from the
model folder's preprocessor_config.json). "-o -" writes to standard output.

The sizes, mean and std come from --model; when that folder has no
preprocessor_config.json (or does not exist), the laion ViT-H/14 defaults are
used and a note says so on standard error.

EXIF orientation is applied by default, as indexing does; --exif=false keeps
the stored orientation, as Hugging Face does for a PIL image.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: 2, err: errors.New("preprocess: -o OUT.f32 is required (use -o - for standard output)")}
			}
			// An output that cannot be created is named before the work.
			if err := checkOutput(out); err != nil {
				return fmt.Errorf("preprocess: %w", err)
			}
			cfg, err := loadPreprocessConfig(cmd.ErrOrStderr(), g.model)
			if err != nil {
				return err
			}
			p := preprocess.New(cfg, preprocess.Options{IgnoreEXIF: !exif})
			tensors, err := preprocessAll(p, args, g.threads)
			if err != nil {
				return err
			}
			if out == "-" {
				return writeF32(cmd.OutOrStdout(), tensors)
			}
			return writeF32File(out, tensors)
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "output file (float32 little-endian [n, 3, H, W]); - for stdout")
	c.Flags().BoolVar(&exif, "exif", true, "apply EXIF orientation (false: pixels as stored, like Hugging Face)")
	return c
}

// loadPreprocessConfig is the model folder's preprocessing as every
// command takes it (clipnpu.PreprocessConfig), with a note on w when the
// laion ViT-H/14 defaults stand in for an absent preprocessor_config.json.
func loadPreprocessConfig(w io.Writer, dir string) (preprocess.Config, error) {
	cfg, err := clipnpu.PreprocessConfig(dir)
	if _, serr := os.Stat(filepath.Join(dir, preprocess.ConfigFile)); err == nil && errors.Is(serr, fs.ErrNotExist) && !clipnpu.IsBundle(dir) {
		fmt.Fprintf(w, "clipidx: note: %s not found; using the laion ViT-H/14 defaults (shortest edge 224, crop 224x224)\n",
			filepath.Join(dir, preprocess.ConfigFile))
	}
	return cfg, err
}

// preprocessAll runs the images on threads workers (0: one per core) and
// returns their tensors in argument order, or the first error in argument
// order.
func preprocessAll(p *preprocess.Processor, paths []string, threads int) ([][]float32, error) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = min(threads, len(paths))
	tensors := make([][]float32, len(paths))
	errs := make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				tensors[i], errs[i] = p.File(paths[i])
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return tensors, nil
}

func writeF32(w io.Writer, tensors [][]float32) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var b [4]byte
	for _, t := range tensors {
		for _, v := range t {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			if _, err := bw.Write(b[:]); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// writeF32File writes the tensors to path (see writeFile).
func writeF32File(path string, tensors [][]float32) error {
	return writeFile(path, func(w io.Writer) error { return writeF32(w, tensors) })
}
