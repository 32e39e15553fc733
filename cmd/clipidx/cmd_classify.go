package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/tokenizer"
)

func init() { subcommands = append(subcommands, newClassifyCmd) }

func newClassifyCmd() *cobra.Command {
	var (
		labels   []string
		template string
		exif     bool
	)
	c := &cobra.Command{
		Use:   "classify IMAGE... --label L... [--template \"a photo of a {}\"]",
		Short: "Zero-shot classify images among labels",
		Long: `Classify each IMAGE among the --label values, zero-shot: each label becomes a
prompt through --template ("{}" is replaced by the label; the default is the
model's own template, else "a photo of a {}"), and the probabilities are the
softmax over labels of exp(logit_scale) · cosine(image, prompt).

One line per image, labels by falling probability:

    cats.jpg: cat 1.000, dog 0.000, car 0.000

Control characters in names and labels are shown as \xNN. An image that
cannot be read, or whose embedding is not finite or is all zero (damaged
weights, a device computing garbage), is reported on standard error and the
others are still classified; the exit status is then 1. A label whose
prompt embedding is so fails the command, naming the model folder.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if len(labels) == 0 {
				return &exitError{code: 2, err: errors.New("classify: pass at least one --label")}
			}
			seen := map[string]string{} // tokenizer.Normalize → the label
			for _, l := range labels {
				k := tokenizer.Normalize(l)
				switch {
				case strings.TrimSpace(l) == "":
					return &exitError{code: 2, err: errors.New("classify: a --label is empty")}
				case seen[k] == l:
					return &exitError{code: 2, err: fmt.Errorf("classify: --label %q is given twice (the probabilities are among distinct labels)", l)}
				case seen[k] != "":
					return &exitError{code: 2, err: fmt.Errorf("classify: --label %q and --label %q are the same to the model (case and spacing aside), so they would split one probability", seen[k], l)}
				}
				seen[k] = l
			}
			if template != "" && !strings.Contains(template, "{}") {
				return &exitError{code: 2, err: fmt.Errorf("classify: --template %q has no {} for the label", template)}
			}
			return runClassify(cmd.OutOrStdout(), cmd.ErrOrStderr(), files, labels, template, exif)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&labels, "label", nil, "a class label (repeatable; taken whole, commas included)")
	f.StringVar(&template, "template", "", `prompt template with {} for the label (default: the model's, else "a photo of a {}")`)
	f.BoolVar(&exif, "exif", true, "apply EXIF orientation (false: pixels as stored, like Hugging Face)")
	return c
}

// runClassify embeds the prompts once, then each image, printing one line
// per image as soon as it is known.
func runClassify(stdout, stderr io.Writer, files, labels []string, template string, exif bool) error {
	m, err := openFace(clipnpu.BothTowers, false)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	defer m.Close()
	zs, err := m.NewZeroShot(labels, template)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	// NaN probabilities are never printed: a prompt the model cannot
	// embed fails the command, an image only its own line.
	what := func(i int) string {
		return fmt.Sprintf("label %q (prompt %q)", labels[i], m.Prompt(template, labels[i]))
	}
	if err := checkEmbeddings(m.Dir(), zs.Embeddings(), m.Info().Dim, what); err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	failed := 0
	for _, f := range files {
		img, err := m.EncodeImageFiles([]string{f}, exif)
		if err == nil {
			err = checkEmbeddings(m.Dir(), img, m.Info().Dim, func(int) string { return "image " + shown(f) })
		}
		if err != nil {
			fmt.Fprintf(stderr, "clipidx: classify: %v\n", err)
			failed++
			continue
		}
		if _, err := fmt.Fprintln(stdout, formatClassification(f, labels, zs.Probabilities(img))); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("classify: %d of %d images could not be classified", failed, len(files))}
	}
	return nil
}

// formatClassification renders "name: label p, label p, ..." by falling
// probability (ties keep the label order). The name and the labels go
// through shown, so that neither can end the line early or send the
// terminal an escape sequence.
func formatClassification(name string, labels []string, p []float64) string {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	var sb strings.Builder
	sb.WriteString(shown(name))
	sb.WriteString(":")
	for k, i := range order {
		if k > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, " %s %.3f", shown(labels[i]), p[i])
	}
	return sb.String()
}
