package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/store"
)

func init() { subcommands = append(subcommands, newEmbedCmd) }

// embedInput is one --image or --text, in command-line order.
type embedInput struct {
	kind  string // "image" or "text"
	value string
}

// orderedFlag is a repeatable flag that appends to a list shared with its
// sibling flag, so --image and --text keep their relative order (and a
// --text value is never split at commas).
type orderedFlag struct {
	kind string
	list *[]embedInput
}

func (f orderedFlag) String() string { return "" }
func (f orderedFlag) Type() string   { return "string" }
func (f orderedFlag) Set(v string) error {
	*f.list = append(*f.list, embedInput{kind: f.kind, value: v})
	return nil
}

func newEmbedCmd() *cobra.Command {
	var (
		inputs []embedInput
		out    string
		format string
		exif   bool
	)
	c := &cobra.Command{
		Use:   "embed [--image F]... [--text T]... -o OUT.f32 [--format f32|json]",
		Short: "Write the projected embeddings of images and texts",
		Long: `Embed images and texts with the --model folder and write the projected, NOT
L2-normalised embeddings (Hugging Face's image_embeds / text_embeds).

--format f32 (the default) writes little-endian float32 rows [n, D] to -o
(- for standard output): all images first, then all texts, each in argument
order, as taconite-clip's "clip embed" does.

--format json prints {"model": NAME, "dim": D, "items": [...]} to standard
output (or to -o), items in argument order: {"kind": "image", "input": F,
"embedding": [...]} or {"kind": "text", "input": T, "ids": [77 ids],
"embedding": [...]}, with "input_bytes": the input's bytes in base64 when
they are not UTF-8.

An embedding that is not finite or is all zero (damaged weights, a device
computing garbage) fails the command, naming the model folder and the
input; nothing is written.

EXIF orientation is applied by default; --exif=false keeps the stored
orientation, which is what Hugging Face computes for a photo with an
orientation tag.

Embeddings are computed in float32 unless --precision (or
CLIPIDX_PRECISION) says otherwise: embed is about the numbers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defaultF32(cmd.Flags().Changed("precision"))
			if len(inputs) == 0 {
				return &exitError{code: 2, err: errors.New("embed: nothing to embed: pass --image FILE and/or --text TEXT")}
			}
			if format != "f32" && format != "json" {
				return &exitError{code: 2, err: fmt.Errorf("embed: --format %q: want f32 or json", format)}
			}
			if format == "f32" && out == "" {
				return &exitError{code: 2, err: errors.New("embed: -o OUT.f32 is required (use -o - for standard output)")}
			}
			// An output that cannot be created is named before the work.
			if err := checkOutput(out); err != nil {
				return fmt.Errorf("embed: %w", err)
			}
			res, err := runEmbed(inputs, exif)
			if err != nil {
				return fmt.Errorf("embed: %w", err)
			}
			return writeOutput(cmd.OutOrStdout(), out, func(w io.Writer) error {
				if format == "json" {
					return res.writeJSON(w)
				}
				return res.writeF32(w)
			})
		},
	}
	f := c.Flags()
	f.Var(orderedFlag{"image", &inputs}, "image", "image file to embed (repeatable)")
	f.Var(orderedFlag{"text", &inputs}, "text", "text to embed (repeatable; taken whole, commas included)")
	f.StringVarP(&out, "output", "o", "", "output file; - for standard output (json: default standard output)")
	f.StringVar(&format, "format", "f32", "f32 (float32 rows [n, D]) or json")
	f.BoolVar(&exif, "exif", true, "apply EXIF orientation (false: pixels as stored, like Hugging Face)")
	return c
}

// embedResult holds the embeddings of one embed run.
type embedResult struct {
	info   clipnpu.Info
	inputs []embedInput
	images []float32 // [number of images, D], in argument order
	texts  []float32 // [number of texts, D]
	ids    []int32   // [number of texts, T]
}

// runEmbed opens only the towers the inputs need and embeds everything.
func runEmbed(inputs []embedInput, exif bool) (*embedResult, error) {
	var files, texts []string
	for _, in := range inputs {
		if in.kind == "image" {
			files = append(files, in.value)
		} else {
			texts = append(texts, in.value)
		}
	}
	towers := clipnpu.BothTowers
	switch {
	case len(files) == 0:
		towers = clipnpu.TextTower
	case len(texts) == 0:
		towers = clipnpu.ImageTower
	}
	m, err := openFace(towers, false)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	res := &embedResult{info: m.Info(), inputs: inputs}
	if res.images, err = m.EncodeImageFiles(files, exif); err != nil {
		return nil, err
	}
	if err := checkEmbeddings(m.Dir(), res.images, m.Info().Dim, func(i int) string { return "image " + shown(files[i]) }); err != nil {
		return nil, err
	}
	if len(texts) > 0 {
		if res.ids, err = m.Tokenize(texts); err != nil {
			return nil, err
		}
		if res.texts, err = m.EncodeTexts(texts); err != nil {
			return nil, err
		}
		if err := checkEmbeddings(m.Dir(), res.texts, m.Info().Dim, func(i int) string { return fmt.Sprintf("text %q", texts[i]) }); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// checkEmbeddings fails on the first row of vecs [n, dim] that is not a
// usable vector (store.Normalize: a NaN or infinite component, or all
// zero), naming the model folder and the input (what(i) for row i): such
// numbers come from damaged weights or a device computing garbage, and
// are never printed as a result.
func checkEmbeddings(model string, vecs []float32, dim int, what func(i int) string) error {
	for i := 0; dim > 0 && (i+1)*dim <= len(vecs); i++ {
		if _, err := store.Normalize(vecs[i*dim : (i+1)*dim]); err != nil {
			return fmt.Errorf("the model in %s returned an invalid embedding for %s (%v): its weights or the device are at fault; `clipidx check` tests a model against reference outputs", model, what(i), err)
		}
	}
	return nil
}

// writeF32 writes images then texts as little-endian float32.
func (r *embedResult) writeF32(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var b [4]byte
	for _, rows := range [][]float32{r.images, r.texts} {
		for _, v := range rows {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			bw.Write(b[:])
		}
	}
	return bw.Flush()
}

// embedItem is one element of the JSON items list.
type embedItem struct {
	Kind  string `json:"kind"`
	Input string `json:"input"`
	// InputBytes is the input's bytes (base64 in JSON) when they are not
	// UTF-8, which "input" can only show with U+FFFD in their place.
	InputBytes []byte    `json:"input_bytes,omitempty"`
	IDs        []int32   `json:"ids,omitempty"`
	Embedding  []float32 `json:"embedding"`
}

// writeJSON writes the items in argument order.
func (r *embedResult) writeJSON(w io.Writer) error {
	D, T := r.info.Dim, r.info.Context
	doc := struct {
		Model string      `json:"model"`
		Dim   int         `json:"dim"`
		Items []embedItem `json:"items"`
	}{Model: r.info.Name, Dim: D, Items: make([]embedItem, 0, len(r.inputs))}
	ni, nt := 0, 0
	for _, in := range r.inputs {
		it := embedItem{Kind: in.kind, Input: in.value, InputBytes: store.PathBytes(in.value)}
		if in.kind == "image" {
			it.Embedding = r.images[ni*D : (ni+1)*D]
			ni++
		} else {
			it.IDs = r.ids[nt*T : (nt+1)*T]
			it.Embedding = r.texts[nt*D : (nt+1)*D]
			nt++
		}
		doc.Items = append(doc.Items, it)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// writeOutput runs write on standard output (path "" or "-") or on the file
// at path (see writeFile: never a truncated file on failure).
func writeOutput(stdout io.Writer, path string, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(stdout)
	}
	return writeFile(path, write)
}
