package main

// `clipidx check [DIR]`: every stage of the pipeline against the reference
// records a taconite CLIP bundle carries (and the fixtures carry in the same
// form): tokenizer, preprocessing, each tower on the reference's own inputs,
// zero-shot logits, and end to end from the image files and label prompts.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/tokenizer"
)

func init() {
	subcommands = append(subcommands, newCheckCmd)
}

func newCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check [DIR]",
		Short: "Check every stage against a bundle's reference outputs",
		Long: `check runs every stage against the reference records of a taconite CLIP bundle
(or a model folder that carries them in the same form, like the test fixtures):
tok_test texts against tok.<i>.ids; per refset, preprocessing of each ref_image
against ref.<j>.pixel_values (PNG must match exactly, other formats are reported
as info because JPEG decoders differ), each tower on the reference's own inputs
against ref.<j>.image_embeds / text_embeds, zero-shot logits against
ref.<j>.logits, and end to end from the image files and label prompts.
EXIF orientation is always ignored here, as Hugging Face does.

It prints one line per result ([ok], [FAIL] or [info]) and ends with
ALL CHECKS PASSED (exit 0) or SOME CHECKS FAILED (exit 1).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := g.model
			if len(args) == 1 {
				dir = args[0]
			}
			c := &checker{w: cmd.OutOrStdout()}
			if err := c.run(dir); err != nil {
				return err
			}
			if c.failed > 0 {
				fmt.Fprintf(c.w, "SOME CHECKS FAILED (%d failed, %d passed)\n", c.failed, c.passed)
				return &exitError{code: 1, err: fmt.Errorf("check %s: %d %s failed", dir, c.failed, plural(c.failed, "check", "checks"))}
			}
			if c.passed == 0 {
				fmt.Fprintln(c.w, "SOME CHECKS FAILED (nothing was checked)")
				return &exitError{code: 1, err: fmt.Errorf("check %s: the folder holds no reference records (tok_test, refset)", dir)}
			}
			fmt.Fprintf(c.w, "ALL CHECKS PASSED (%d %s)\n", c.passed, plural(c.passed, "check", "checks"))
			return nil
		},
	}
}

// checker prints results and counts them; the comparisons and their gates
// are package compare's.
type checker struct {
	w              io.Writer
	passed, failed int
	gates          compare.Gates // chosen by compare.For from the model's Info
}

func (c *checker) ok(format string, a ...any) {
	c.passed++
	fmt.Fprintf(c.w, "[ok]   "+format+"\n", a...)
}

func (c *checker) fail(format string, a ...any) {
	c.failed++
	fmt.Fprintf(c.w, "[FAIL] "+format+"\n", a...)
}

func (c *checker) info(format string, a ...any) {
	fmt.Fprintf(c.w, "[info] "+format+"\n", a...)
}

// gate reports ok or FAIL on cond.
func (c *checker) gate(cond bool, format string, a ...any) {
	if cond {
		c.ok(format, a...)
	} else {
		c.fail(format, a...)
	}
}

func (c *checker) run(dir string) error {
	b, err := bundle.Open(dir)
	if err != nil {
		if errors.Is(err, bundle.ErrNotBundle) {
			return fmt.Errorf("%s has no %s: check needs the reference records of a taconite CLIP bundle (tok_test, refset, ref.<j>.* tensors)", dir, bundle.ManifestFile)
		}
		return fmt.Errorf("open bundle: %w", err)
	}
	defer b.Close()
	c.info("bundle %s (manifest version %d)", dir, b.Version)

	tok, err := tokenizer.Load(dir)
	if err != nil {
		c.fail("tokenizer: %v", err)
	} else {
		c.tokenizer(b, tok)
	}

	refsets, err := b.RefSets()
	if err != nil {
		c.fail("reference sets: %v", err)
		return nil
	}
	if len(refsets) == 0 {
		c.info("no refset records: only the tokenizer was checked")
		return nil
	}

	// The towers, tokenizer-free prompts and preprocessing come from the
	// checked folder through the model face, as every command takes them.
	g.model = dir
	m, err := openFace(clipnpu.BothTowers, false)
	if err != nil {
		c.fail("%v", err) // the face says "load model: ..." or what to fix
		return nil
	}
	defer m.Close()
	proc, err := m.Processor(false) // EXIF orientation is ignored, as HF does
	if err != nil {
		c.fail("preprocessing config: %v", err)
		return nil
	}
	model, err := m.Backend(clipnpu.BothTowers)
	if err != nil {
		c.fail("%v", err)
		return nil
	}
	info := model.Info()
	note := ""
	if info.DeviceNote != "" {
		note = " (" + info.DeviceNote + ")"
	}
	weights := ""
	if info.Weights != "" {
		weights = ", weights " + info.Weights
	}
	c.info("model %s on %s%s, dim %d, logit scale %.4f%s", info.Name, info.Device, note, info.Dim, info.LogitScale, weights)
	if c.gates, err = compare.For(info); err != nil {
		c.fail("%v", err)
		return nil
	}
	if info.Rounded != "" {
		c.info("weights rounded to %s at load (--weights %s): logits gated at %g instead of %g; embeddings keep cosine %g", info.Rounded, info.Rounded, c.gates.Logit, compare.F32CPU().Logit, c.gates.Image.MinCosine)
	}
	for _, rs := range refsets {
		c.refset(b, rs, model, proc, tok)
	}
	return nil
}

// tokenizer compares every tok_test record with its reference ids.
func (c *checker) tokenizer(b *bundle.Bundle, tok *tokenizer.Tokenizer) {
	for _, tt := range b.TokTests() {
		if !tt.HasIDs {
			c.info("tok_test %d %q: no tok.%d.ids tensor", tt.Index, short(tt.Text), tt.Index)
			continue
		}
		want, err := tensorI32(b, tt.IDs)
		if err != nil {
			c.fail("tok_test %d: %v", tt.Index, err)
			continue
		}
		got := tok.Encode(tt.Text)
		if i := firstDiff(got, want); i >= 0 {
			c.fail("tok_test %d %q: id %d is %d, reference %d", tt.Index, short(tt.Text), i, at(got, i), at(want, i))
		} else {
			c.ok("tok_test %d %q: %d tokens equal", tt.Index, short(tt.Text), tok.Length(got))
		}
	}
}

// refset runs every stage of one reference set.
func (c *checker) refset(b *bundle.Bundle, rs bundle.RefSet, model clipnpu.Backend, proc *preprocess.Processor, tok *tokenizer.Tokenizer) {
	info := model.Info()
	S, D, T := info.ImageSize, info.Dim, info.Context
	nImg, nTxt := len(rs.Images), len(rs.Labels)
	tag := fmt.Sprintf("refset %d", rs.Index)

	// A reference set without one of its tensors leaves stages unchecked:
	// that is a failure, never a silent pass.
	for _, m := range []struct{ tensor, stages string }{
		{rs.PixelValues, "pixel_values: preprocessing and the image tower"},
		{rs.InputIDs, "input_ids: the text tower"},
		{rs.Logits, "logits: zero-shot and end to end"},
	} {
		if m.tensor == "" {
			name, stages, _ := strings.Cut(m.stages, ": ")
			c.fail("%s: the bundle has no ref.%d.%s tensor, so %s cannot be checked", tag, rs.Index, name, stages)
		}
	}

	// Preprocessing of each image file against the reference pixels.
	var refPixels []float32
	if rs.PixelValues != "" {
		var err error
		if refPixels, err = tensorF32(b, rs.PixelValues, nImg*3*S*S); err != nil {
			c.fail("%s pixels: %v", tag, err)
		}
	}
	filePixels := make([]float32, 0, nImg*3*S*S)
	filesOK := true
	for i, path := range rs.Images {
		px, err := proc.File(path)
		if err != nil {
			c.fail("%s image %d %s: %v", tag, i, rs.ImageFiles[i], err)
			filesOK = false
			continue
		}
		if len(px) != 3*S*S {
			c.fail("%s image %d %s: preprocessing gives %d values, the model takes 3x%dx%d", tag, i, rs.ImageFiles[i], len(px), S, S)
			filesOK = false
			continue
		}
		filePixels = append(filePixels, px...)
		if refPixels == nil {
			continue
		}
		v, err := compare.Values(px, refPixels[i*3*S*S:(i+1)*3*S*S])
		if err != nil {
			c.fail("%s pixels %d %s: %v", tag, i, rs.ImageFiles[i], err)
			continue
		}
		msg := fmt.Sprintf("%s pixels %d %s: %d of %d values differ (max |diff| %.3g)", tag, i, rs.ImageFiles[i], v.Differ, v.Values, v.MaxAbsDiff)
		if strings.EqualFold(filepath.Ext(path), ".png") {
			c.gate(v.Differ == 0, "%s", msg)
		} else {
			c.info("%s (not gated: JPEG and other decoders differ from Pillow's)", msg)
		}
	}

	// Each tower on the reference's own inputs.
	var imgEmb, txtEmb []float32
	if refPixels != nil {
		emb, err := model.EncodeImages(refPixels, nImg)
		if err != nil {
			c.fail("%s image tower: %v", tag, err)
		} else {
			imgEmb = emb
			c.compareEmbeds(b, tag+" image tower", rs.ImageEmbeds, emb, nImg, D, c.gates.Image)
			if rs.NPUImageEmbeds != "" {
				c.infoEmbeds(b, tag+" image tower vs NPU app", rs.NPUImageEmbeds, emb, nImg, D)
			}
		}
	}
	var refIDs []int32
	if rs.InputIDs != "" {
		ids, err := tensorI32(b, rs.InputIDs)
		switch {
		case err != nil:
			c.fail("%s input ids: %v", tag, err)
		case len(ids) != nTxt*T:
			c.fail("%s input ids: %d values, want %d prompts x %d", tag, len(ids), nTxt, T)
		default:
			refIDs = ids
			emb, err := model.EncodeTexts(ids, nTxt)
			if err != nil {
				c.fail("%s text tower: %v", tag, err)
			} else {
				txtEmb = emb
				c.compareEmbeds(b, tag+" text tower", rs.TextEmbeds, emb, nTxt, D, c.gates.Text)
				if rs.NPUTextEmbeds != "" {
					c.infoEmbeds(b, tag+" text tower vs NPU app", rs.NPUTextEmbeds, emb, nTxt, D)
				}
			}
		}
	}

	// Zero-shot on the reference inputs.
	var refLogits []float32
	if rs.Logits != "" {
		var err error
		if refLogits, err = tensorF32(b, rs.Logits, nImg*nTxt); err != nil {
			c.fail("%s logits: %v", tag, err)
		}
	}
	if refLogits != nil && imgEmb != nil && txtEmb != nil {
		got := clipnpu.Logits(imgEmb, txtEmb, nImg, nTxt, D, info.LogitScale)
		c.compareLogits(tag+" zero-shot", got, refLogits, nImg, nTxt)
	}

	// End to end: image files and label prompts, as a user runs classify.
	if !filesOK || refLogits == nil || tok == nil || nTxt == 0 {
		if tok == nil || !filesOK {
			c.fail("%s end to end: not run (see the failures above)", tag)
		}
		return
	}
	template := info.PromptTemplate
	if p, ok := b.Param("prompt_template"); ok {
		template = p
	}
	prompts := make([]string, nTxt)
	for i, l := range rs.Labels {
		prompts[i] = clipnpu.FillTemplate(template, l)
	}
	ids := tok.EncodeBatch(prompts)
	e2eTxt, err := model.EncodeTexts(ids, nTxt)
	if err != nil {
		c.fail("%s end to end: %v", tag, err)
		return
	}
	if refIDs != nil {
		i := firstDiff(ids, refIDs)
		c.gate(i < 0, "%s label prompts (template %q) tokenize to the reference input ids%s", tag, template, diffNote(i, ids, refIDs))
	}
	e2eImg, err := model.EncodeImages(filePixels, nImg)
	if err != nil {
		c.fail("%s end to end: %v", tag, err)
		return
	}
	got := clipnpu.Logits(e2eImg, e2eTxt, nImg, nTxt, D, info.LogitScale)
	s, err := compare.Logits(got, refLogits, nImg, nTxt)
	if err != nil {
		c.fail("%s end to end: %v", tag, err)
		return
	}
	c.gate(len(s.CheckTop1()) == 0, "%s end to end from files: zero-shot top-1 agrees on %d/%d images", tag, s.Top1Agree, nImg)
}

// compareEmbeds gates each row against the reference tensor: cosine,
// relative error and max |diff|.
func (c *checker) compareEmbeds(b *bundle.Bundle, what, name string, got []float32, n, dim int, g compare.Gate) {
	if name == "" {
		c.fail("%s: the bundle has no reference embeddings, so it cannot be checked", what)
		return
	}
	ref, err := tensorF32(b, name, n*dim)
	if err != nil {
		c.fail("%s: %v", what, err)
		return
	}
	s, err := compare.Embeddings(got, ref, n, dim)
	if err != nil {
		c.fail("%s: %v", what, err)
		return
	}
	v := s.Check(g)
	why := ""
	if len(v) > 0 {
		why = ": " + strings.Join(v, "; ")
	}
	c.gate(len(v) == 0, "%s: cosine min %.7f mean %.7f (gate %g), rel err max %.3g (gate %g), max |diff| %.3g (%.3g of max |ref|, gate %g) over %d rows%s",
		what, s.MinCosine, s.MeanCosine, g.MinCosine, s.MaxRelErr, g.MaxRelErr, s.MaxAbsDiff, s.DiffRatio(), g.MaxDiff, n, why)
}

// infoEmbeds reports, without gating, how close we are to the NPU app's output.
func (c *checker) infoEmbeds(b *bundle.Bundle, what, name string, got []float32, n, dim int) {
	ref, err := tensorF32(b, name, n*dim)
	if err != nil {
		c.info("%s: %v", what, err)
		return
	}
	s, err := compare.Embeddings(got, ref, n, dim)
	if err != nil {
		c.info("%s: %v", what, err)
		return
	}
	c.info("%s: cosine min %.6f mean %.6f, rel err max %.3g, max |diff| %.3g", what, s.MinCosine, s.MeanCosine, s.MaxRelErr, s.MaxAbsDiff)
}

// compareLogits gates top-1 agreement and, when the gates say so (float32
// numerics), the logits themselves; it reports the largest probability
// difference.
func (c *checker) compareLogits(what string, got, ref []float32, nImg, nTxt int) {
	s, err := compare.Logits(got, ref, nImg, nTxt)
	if err != nil {
		c.fail("%s: %v", what, err)
		return
	}
	c.gate(len(s.CheckTop1()) == 0, "%s: top-1 agrees on %d/%d images", what, s.Top1Agree, nImg)
	msg := fmt.Sprintf("%s: max |logit diff| %.3g, max |probability diff| %.3g", what, s.MaxAbsDiff, s.MaxProbDiff)
	if c.gates.CheckLogitValues {
		c.gate(len(s.CheckValues(c.gates.Logit)) == 0, "%s (gate %g)", msg, c.gates.Logit)
	} else {
		c.info("%s", msg)
	}
}

func tensorF32(b *bundle.Bundle, name string, want int) ([]float32, error) {
	t, err := b.Tensor(name)
	if err != nil {
		return nil, err
	}
	v, err := t.F32()
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	if len(v) != want {
		return nil, fmt.Errorf("tensor %s has %d values (shape %v), want %d", name, len(v), t.Shape, want)
	}
	return v, nil
}

func tensorI32(b *bundle.Bundle, name string) ([]int32, error) {
	t, err := b.Tensor(name)
	if err != nil {
		return nil, err
	}
	v, err := t.I32()
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return v, nil
}

// firstDiff returns the first index where a and b differ (a length
// difference counts), or -1 when they are equal.
func firstDiff(a, b []int32) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(v []int32, i int) int64 {
	if i < len(v) {
		return int64(v[i])
	}
	return -1
}

func diffNote(i int, got, want []int32) string {
	if i < 0 {
		return ""
	}
	return fmt.Sprintf(": id %d is %d, reference %d", i, at(got, i), at(want, i))
}

// short trims a long text for a one-line report.
func short(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}
