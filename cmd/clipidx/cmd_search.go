package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
	"github.com/clipidx/clipidx/tokenizer"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newSearchCmd) }

func newSearchCmd() *cobra.Command {
	var k int
	var asJSON, pathsOnly, null, exact bool
	var threshold float32
	var under, images []string
	c := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find the indexed images that best match a text or an image",
		Long: `Rank every indexed image by cosine similarity to the query and print
"score<TAB>path" lines, best first.

Several query terms combine as a weighted sum in embedding space (each term's
embedding normalised first, the sum normalised after):

  beach            add "beach" (weight 1)
  +sunset          add (weight 1)
  -people          subtract (weight -1)
  +2:dog  -0.5:car explicit weights (the sign is required)
  @photo.jpg       an image file instead of a text (also -@x.jpg, +0.5:@x.jpg)
  \-5 degrees      a text starting with - + @ or \

Terms that start with "-" must come after "--" so they are not read as flags:

  clipidx search "a beach" -- -people +0.5:sunset
  clipidx search --image ~/Photos/cat.jpg -k 20

A text query loads only the text tower. An image already in the index is
looked up by its content and needs no model at all.`,
		Example: `  clipidx search "a red bicycle"
  clipidx search -0 -k 50 "receipts" | xargs -0 cp -t ~/receipts
  clipidx search --under ~/Photos/2023 --json "birthday cake"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if k <= 0 {
				return usageError("-k takes a number of results ≥ 1, not %d", k)
			}
			if t := float64(threshold); math.IsNaN(t) || math.IsInf(t, 0) {
				return usageError("--threshold takes a finite cosine such as 0.25, not %v", threshold)
			}
			terms, err := search.ParseQuery(args)
			if len(args) == 0 {
				terms, err = nil, nil
			}
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			for _, im := range images {
				terms = append(terms, search.Term{Weight: 1, Image: im})
			}
			if len(terms) == 0 {
				return usageError("nothing to search for: give a text or --image FILE")
			}
			for i := range under {
				if under[i], err = filepath.Abs(under[i]); err != nil {
					return err
				}
			}
			opts := search.Options{K: k, Under: under, Threads: g.threads, Exact: exact}
			if cmd.Flags().Changed("threshold") {
				opts.Threshold = &threshold
			}
			q, err := queryVector(terms)
			if err != nil {
				return err
			}
			r, err := store.OpenReader(g.db, store.ReaderOptions{})
			if err != nil {
				return err
			}
			defer r.Close()
			var res []search.Result
			err = r.View(func(s *store.Snapshot) error {
				res, err = search.Search(s, q, opts)
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				if res == nil {
					res = []search.Result{}
				}
				return json.NewEncoder(out).Encode(res)
			case null:
				for _, x := range res {
					fmt.Fprint(out, x.Path, "\x00")
				}
			case pathsOnly:
				for _, x := range res {
					fmt.Fprintln(out, x.Path)
				}
			default:
				for _, x := range res {
					fmt.Fprintf(out, "%.4f\t%s\n", x.Score, x.Path)
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.IntVarP(&k, "k", "k", 10, "number of results")
	f.BoolVar(&asJSON, "json", false, `print [{"path": P, "score": S}] (score = cosine)`)
	f.BoolVar(&pathsOnly, "paths-only", false, "print only paths, one a line (for xargs)")
	f.BoolVarP(&null, "null", "0", false, "print only paths, each ended by a NUL byte (for xargs -0)")
	f.Float32Var(&threshold, "threshold", 0, "drop results with a cosine below this")
	f.StringArrayVar(&under, "under", nil, "only results inside this folder (repeatable)")
	f.StringArrayVar(&images, "image", nil, "find images similar to this file (repeatable; same as the term @FILE)")
	f.BoolVar(&exact, "exact", false, "scan the full float32 vectors (slower; same results)")
	f.MarkHidden("exact")
	return c
}

// queryVector embeds the query. Image terms already in the index take their
// stored vector; the model is loaded only for the rest, with the towers
// they need. The index is opened only briefly, never while the model loads.
func queryVector(terms []search.Term) ([]float32, error) {
	r, err := store.OpenReader(g.db, store.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	var have store.Identity
	stored := map[string][]float32{}
	err = r.View(func(s *store.Snapshot) error {
		have = s.Identity()
		for _, t := range terms {
			if t.Image == "" {
				continue
			}
			data, err := os.ReadFile(t.Image)
			if err != nil {
				return err
			}
			if _, v := s.VectorByHash(sha256.Sum256(data)); v != nil {
				stored[t.Image] = v
			}
		}
		return nil
	})
	r.Close()
	if err != nil {
		return nil, err
	}
	needText, needImage := false, false
	for _, t := range terms {
		needText = needText || t.Image == ""
		needImage = needImage || (t.Image != "" && stored[t.Image] == nil)
	}
	enc := &queryEncoder{stored: stored}
	if needText || needImage {
		towers := clipnpu.BothTowers
		switch {
		case !needImage:
			towers = clipnpu.TextTower
		case !needText:
			towers = clipnpu.ImageTower
		}
		b, err := openModel(towers)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		enc.b = b
		info := b.Info()
		want := store.Identity{Model: info.Name, WeightsHash: info.WeightsHash, Weights: info.Rounded, Dim: info.Dim}
		if needImage {
			proc, err := openPreprocessor(have.EXIF)
			if err != nil {
				return nil, err
			}
			enc.proc = proc.File
			want = modelIdentity(info, proc, have.EXIF)
		}
		if err := have.Compatible(want, !needImage); err != nil {
			return nil, err
		}
		if needText {
			if enc.tok, err = openTokenizer(); err != nil {
				return nil, err
			}
		}
	}
	return search.Embed(terms, have.Dim, enc, enc)
}

// queryEncoder adapts the model (and the index's stored vectors) to the
// search package's TextEncoder and ImageEncoder.
type queryEncoder struct {
	b      clipnpu.Backend
	tok    *tokenizer.Tokenizer
	proc   func(path string) ([]float32, error)
	stored map[string][]float32
}

func (e *queryEncoder) EncodeTexts(texts []string) ([]float32, error) {
	_, v, err := encodeTexts(e.b, e.tok, texts)
	return v, err
}

func (e *queryEncoder) EncodeImageFile(path string) ([]float32, error) {
	if v := e.stored[path]; v != nil {
		return v, nil
	}
	px, err := e.proc(path)
	if err != nil {
		return nil, err
	}
	return e.b.EncodeImages(px, 1)
}
