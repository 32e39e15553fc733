package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
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

An image that cannot be read is reported on standard error and the others are
still classified; the exit status is then 1.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if len(labels) == 0 {
				return &exitError{code: 2, err: errors.New("classify: pass at least one --label")}
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
	b, err := openModel(clipnpu.BothTowers)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	defer b.Close()
	tok, err := openTokenizer()
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	proc, err := openPreprocessor(exif)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	info := b.Info()
	if err := checkImageSize(proc, info); err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	if template == "" {
		template = info.PromptTemplate
	}
	if template == "" {
		template = clipnpu.DefaultPromptTemplate
	}
	prompts := make([]string, len(labels))
	for i, l := range labels {
		prompts[i] = fillTemplate(template, l)
	}
	_, txt, err := encodeTexts(b, tok, prompts)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}

	failed := 0
	for _, f := range files {
		img, err := encodeImageFiles(b, proc, []string{f})
		if err != nil {
			fmt.Fprintf(stderr, "clipidx: classify: %v\n", err)
			failed++
			continue
		}
		logits := clipnpu.Logits(img, txt, 1, len(labels), info.Dim, info.LogitScale)
		if _, err := fmt.Fprintln(stdout, formatClassification(f, labels, softmax(logits))); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("classify: %d of %d images could not be classified", failed, len(files))}
	}
	return nil
}

// softmax turns logits into probabilities (in float64, max-subtracted).
func softmax(logits []float32) []float64 {
	p := make([]float64, len(logits))
	maxL := math.Inf(-1)
	for _, l := range logits {
		maxL = math.Max(maxL, float64(l))
	}
	var sum float64
	for i, l := range logits {
		p[i] = math.Exp(float64(l) - maxL)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// formatClassification renders "name: label p, label p, ..." by falling
// probability (ties keep the label order).
func formatClassification(name string, labels []string, p []float64) string {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteString(":")
	for k, i := range order {
		if k > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, " %s %.3f", labels[i], p[i])
	}
	return sb.String()
}
