package clipnpu

// Check: every stage of the pipeline against the reference records a
// taconite CLIP bundle carries (and the fixtures carry in the same form):
// the tokenizer, the preprocessing, each tower on the reference's own
// inputs, zero-shot logits, and end to end from the image files and label
// prompts. It measures and gates with package compare and returns a report;
// `clipidx check` prints it.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/tokenizer"
)

// CheckStatus is how a CheckResult counts.
type CheckStatus int

const (
	// CheckInfo is reported and not counted: what ran, or a measure that
	// is not gated (JPEG pixels, bf16 logit values, the NPU app's output).
	CheckInfo CheckStatus = iota
	// CheckOK is a passed check.
	CheckOK
	// CheckFail is a failed check, or a stage that could not run.
	CheckFail
)

// CheckStage names the stage of the pipeline a CheckResult is about.
type CheckStage string

// The stages, in the order Check runs them.
const (
	StageBundle     CheckStage = "bundle"      // the folder's manifest and reference sets
	StageTokenizer  CheckStage = "tokenizer"   // tok_test texts against tok.<i>.ids
	StageModel      CheckStage = "model"       // loading the towers and the preprocessing
	StageRefSet     CheckStage = "refset"      // a reference set's missing tensors
	StagePixels     CheckStage = "pixels"      // preprocessing against ref.<j>.pixel_values
	StageImageTower CheckStage = "image tower" // the image tower on the reference pixels
	StageTextTower  CheckStage = "text tower"  // the text tower on the reference ids
	StageZeroShot   CheckStage = "zero-shot"   // logits of the towers' embeddings
	StagePrompts    CheckStage = "prompts"     // label prompts against the reference ids
	StageEndToEnd   CheckStage = "end to end"  // image files and label prompts to top-1
)

// CheckResult is one line of a check: a stage, how it counts, a one-line
// message (what `clipidx check` prints after [ok], [FAIL] or [info]) and
// the measures behind it, when there are some.
type CheckResult struct {
	Stage  CheckStage
	Status CheckStatus
	// RefSet is the reference set's index, -1 for a result about the
	// whole folder.
	RefSet  int
	Message string

	// The measures, nil when the result has none of that kind: pixels
	// against the reference (Values), embeddings (Embeddings, and Gate
	// when they were gated), logits (Logits).
	Values     *compare.ValueStats
	Embeddings *compare.Stats
	Gate       *compare.Gate
	Logits     *compare.LogitStats
}

// CheckReport is what Check found.
type CheckReport struct {
	Dir string
	// Info is the loaded model (zero when it could not be loaded); Gates
	// the bounds compare.For chose from it.
	Info    Info
	Gates   compare.Gates
	Results []CheckResult
}

// Passed counts the results with status CheckOK.
func (r *CheckReport) Passed() int { return r.count(CheckOK) }

// Failed counts the results with status CheckFail.
func (r *CheckReport) Failed() int { return r.count(CheckFail) }

func (r *CheckReport) count(s CheckStatus) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// CheckOptions configures Check. The zero value loads the model on the
// automatic device and reports at the end only.
type CheckOptions struct {
	// OpenOptions open the model as Open does; Towers and Lazy are
	// ignored (every stage needs both towers).
	OpenOptions
	// OnResult, when set, is called with each result as it is found, in
	// order, before Check returns.
	OnResult func(CheckResult)
	// CompareBF16 also runs each tower in bf16 on the reference's inputs
	// and reports (as info, not gated) how far it lies from the float32
	// run: for a float32 check on the CPU's fast path of a CPU with a
	// bf16 kernel, so that a user sees what --precision bf16 (or auto)
	// costs on the folder's own model.
	CompareBF16 bool
}

// Check runs every stage of the pipeline in the model folder dir against
// the reference records it carries (tok_test, refset and ref.<j>.*
// tensors, the form of a taconite CLIP bundle): the tokenizer's ids, per
// reference set the preprocessing of each ref_image (PNG must match
// exactly; other formats are reported as info, JPEG decoders differ), each
// tower on the reference's own inputs, zero-shot logits, and end to end
// from the image files and label prompts. EXIF orientation is ignored, as
// Hugging Face does. The towers and preprocessing come from the folder
// through the model face; the prompt template from the manifest's
// prompt_template param (how the references were made), else the model's;
// the gates from compare.For.
//
// A stage that fails, or cannot run, is a CheckFail result, not an error,
// and so is a reference that is missing (no refset, a tok_test without
// its ids): a stage left unchecked never passes;
// the error is for a folder that is not a bundle (it wraps
// bundle.ErrNotBundle) or whose manifest cannot be read.
func Check(dir string, o CheckOptions) (*CheckReport, error) {
	b, err := bundle.Open(dir)
	if err != nil {
		if errors.Is(err, bundle.ErrNotBundle) {
			return nil, &notBundleError{fmt.Sprintf("%s has no %s: check needs the reference records of a taconite CLIP bundle (tok_test, refset, ref.<j>.* tensors)", dir, bundle.ManifestFile), err}
		}
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	defer b.Close()
	c := &checker{r: &CheckReport{Dir: dir}, on: o.OnResult, b: b, compareBF16: o.CompareBF16}
	c.run(dir, o.OpenOptions)
	return c.r, nil
}

// notBundleError words ErrNotBundle for check without repeating it.
type notBundleError struct {
	msg string
	err error
}

func (w *notBundleError) Error() string { return w.msg }
func (w *notBundleError) Unwrap() error { return w.err }

// checker records results; the comparisons and their gates are package
// compare's.
type checker struct {
	r           *CheckReport
	on          func(CheckResult)
	b           *bundle.Bundle
	compareBF16 bool // CheckOptions.CompareBF16
	// bf16Runs are the comparisons with bf16 the float32 checks left to
	// run once the float32 model is closed, so that the two are never
	// held at once (ViT-H/14: 3.9 GB of float32 weights and 2 GB of bf16).
	bf16Runs []bf16Run
}

// bf16Run is one tower's bf16 pass on the inputs a float32 check ran,
// with the float32 embeddings to compare it with.
type bf16Run struct {
	stage  CheckStage
	refSet int
	what   string
	emb    []float32 // float32 embeddings [n, dim]
	n      int
	run    func(Backend) ([]float32, error)
}

func (c *checker) add(res CheckResult) {
	c.r.Results = append(c.r.Results, res)
	if c.on != nil {
		c.on(res)
	}
}

func (c *checker) result(st CheckStatus, stage CheckStage, rs int, format string, a ...any) {
	c.add(CheckResult{Stage: stage, Status: st, RefSet: rs, Message: fmt.Sprintf(format, a...)})
}

// gateStatus is CheckOK when cond holds, else CheckFail.
func gateStatus(cond bool) CheckStatus {
	if cond {
		return CheckOK
	}
	return CheckFail
}

func (c *checker) run(dir string, o OpenOptions) {
	c.result(CheckInfo, StageBundle, -1, "bundle %s (manifest version %d)", dir, c.b.Version)
	tok, err := tokenizer.Load(dir)
	if err != nil {
		c.result(CheckFail, StageTokenizer, -1, "tokenizer: %v", err)
	} else {
		c.tokenizer(tok)
	}

	refsets, err := c.b.RefSets()
	if err != nil {
		c.result(CheckFail, StageBundle, -1, "reference sets: %v", err)
		return
	}
	if len(refsets) == 0 {
		// Missing references are a failure, as a missing tensor is: a
		// tokenizer alone passing says nothing of the model.
		c.result(CheckFail, StageBundle, -1, "no refset records: only the tokenizer was checked; the model was not loaded, and the preprocessing, the towers, zero-shot and end to end cannot be checked")
		return
	}

	// The towers, prompts and preprocessing come from the checked folder
	// through the model face, as every command takes them.
	o.Towers, o.Lazy = BothTowers, false
	m, err := Open(dir, o)
	if err != nil {
		c.result(CheckFail, StageModel, -1, "%v", err) // the face says "load model: ..." or what to fix
		return
	}
	defer m.Close()
	proc, err := m.Processor(false) // EXIF orientation is ignored, as HF does
	if err != nil {
		c.result(CheckFail, StageModel, -1, "preprocessing config: %v", err)
		return
	}
	model, err := m.Backend(BothTowers)
	if err != nil {
		c.result(CheckFail, StageModel, -1, "%v", err)
		return
	}
	info := model.Info()
	c.r.Info = info
	note := ""
	if info.DeviceNote != "" {
		note = " (" + info.DeviceNote + ")"
	}
	weights := ""
	if info.Weights != "" {
		weights = ", weights " + info.Weights
	}
	c.result(CheckInfo, StageModel, -1, "model %s on %s%s, dim %d, logit scale %.4f%s", info.Name, info.Device, note, info.Dim, info.LogitScale, weights)
	if c.r.Gates, err = compare.For(info); err != nil {
		c.result(CheckFail, StageModel, -1, "%v", err)
		return
	}
	if info.Rounded != "" {
		c.result(CheckInfo, StageModel, -1, "weights rounded to %s at load (--weights %s): logits gated at %g instead of %g; embeddings keep cosine %g", info.Rounded, info.Rounded, c.r.Gates.Logit, compare.F32CPU().Logit, c.r.Gates.Image.MinCosine)
	}
	template := c.promptTemplate(info)
	bf16 := c.compareBF16 && info.Precision == "f32" && info.Device == DeviceCPU
	for _, rs := range refsets {
		(&refCheck{checker: c, rs: rs, model: model, bf16: bf16, info: info, proc: proc, tok: tok, template: template}).run()
	}
	if len(c.bf16Runs) > 0 {
		m.Close() // before the bf16 model loads (the deferred Close is then a no-op)
		c.runBF16(dir, o, info.Dim)
	}
}

// promptTemplate is the template the label prompts of the end-to-end
// checks are made with, reported once with where it comes from: the
// manifest's prompt_template param says how the reference logits were
// made, so it is the one to compare with them. Where it differs from the
// model's own template (what classify uses without --template: a Hugging
// Face folder's is DefaultPromptTemplate, whatever records lie beside it),
// the result says so, since a passing check then vouches for classify only
// with that template.
func (c *checker) promptTemplate(info Info) string {
	model := info.PromptTemplate
	if model == "" {
		model = DefaultPromptTemplate
	}
	p, ok := c.b.Param("prompt_template")
	switch {
	case !ok:
		c.result(CheckInfo, StagePrompts, -1, "prompt template %q: the model's, as classify uses it (the manifest has no prompt_template param)", model)
		return model
	case p == model:
		c.result(CheckInfo, StagePrompts, -1, "prompt template %q: the manifest's prompt_template, with which the reference logits were made, and the model's, as classify uses it", p)
	default:
		c.result(CheckInfo, StagePrompts, -1, "prompt template %q: the manifest's prompt_template, with which the reference logits were made; classify uses the model's %q unless given --template %q", p, model, p)
	}
	return p
}

// runBF16 loads the model in bf16 for CompareBF16, once the float32 one is
// closed, and reports the cosine of each tower's bf16 embeddings of the
// inputs the float32 checks ran to the float32 ones, without a gate (an
// info result says why when it cannot load).
func (c *checker) runBF16(dir string, o OpenOptions, dim int) {
	opts := o.Options
	opts.Precision, opts.Towers = "bf16", BothTowers
	b, err := loadModel(dir, opts)
	if err != nil {
		c.result(CheckInfo, StageModel, -1, "bf16 not compared with float32: %v", err)
		return
	}
	defer b.Close()
	for _, r := range c.bf16Runs {
		got, err := r.run(b)
		if err == nil {
			var s compare.Stats
			if s, err = compare.Embeddings(got, r.emb, r.n, dim); err == nil {
				c.add(CheckResult{Stage: r.stage, Status: CheckInfo, RefSet: r.refSet, Embeddings: &s,
					Message: fmt.Sprintf("%s in bf16 vs float32: cosine min %.7f mean %.7f, rel err max %.3g over %d rows (what --precision bf16 or auto changes)",
						r.what, s.MinCosine, s.MeanCosine, s.MaxRelErr, r.n)})
				continue
			}
		}
		c.result(CheckInfo, r.stage, r.refSet, "%s in bf16: %v", r.what, err)
	}
}

// compareBF16 keeps a bf16 pass on the inputs of a float32 one (emb) for
// runBF16, when the check compares bf16 with float32.
func (c *refCheck) compareBF16(stage CheckStage, what string, emb []float32, n int, run func(Backend) ([]float32, error)) {
	if c.bf16 {
		c.bf16Runs = append(c.bf16Runs, bf16Run{stage: stage, refSet: c.rs.Index, what: what, emb: emb, n: n, run: run})
	}
}

// tokenizer compares every tok_test record with its reference ids.
func (c *checker) tokenizer(tok *tokenizer.Tokenizer) {
	for _, tt := range c.b.TokTests() {
		if !tt.HasIDs {
			c.result(CheckFail, StageTokenizer, -1, "tok_test %d %q: the bundle has no tok.%d.ids tensor, so it cannot be checked", tt.Index, short(tt.Text), tt.Index)
			continue
		}
		want, err := tensorI32(c.b, tt.IDs)
		if err != nil {
			c.result(CheckFail, StageTokenizer, -1, "tok_test %d: %v", tt.Index, err)
			continue
		}
		got := tok.Encode(tt.Text)
		if len(want) != len(got) {
			c.result(CheckFail, StageTokenizer, -1, "tok_test %d %q: tensor %s holds %d ids, the tokenizer gives %d", tt.Index, short(tt.Text), tt.IDs, len(want), len(got))
		} else if i := firstDiff(got, want); i >= 0 {
			c.result(CheckFail, StageTokenizer, -1, "tok_test %d %q: id %d is %d, reference %d", tt.Index, short(tt.Text), i, at(got, i), at(want, i))
		} else {
			c.result(CheckOK, StageTokenizer, -1, "tok_test %d %q: %d tokens equal", tt.Index, short(tt.Text), tok.Length(got))
		}
	}
}

// refCheck runs every stage of one reference set.
type refCheck struct {
	*checker
	rs    bundle.RefSet
	model Backend
	bf16  bool // compare bf16 with float32 (CompareBF16 on a float32 CPU model)
	info  Info
	proc  *preprocess.Processor
	tok   *tokenizer.Tokenizer // nil when the tokenizer did not load
	// template makes the label prompts of the end-to-end checks (see
	// checker.promptTemplate).
	template string
	tag      string

	refPixels, filePixels []float32 // [images, 3, S, S]
	filesOK               bool      // every image file preprocessed
	imgEmb, txtEmb        []float32 // the towers on the reference inputs
	refIDs                []int32   // [prompts, T]
	refLogits             []float32 // [images, prompts]
}

func (c *refCheck) fail(stage CheckStage, format string, a ...any) {
	c.result(CheckFail, stage, c.rs.Index, format, a...)
}

func (c *refCheck) run() {
	c.tag = fmt.Sprintf("refset %d", c.rs.Index)
	// A reference set without one of its tensors leaves stages unchecked:
	// that is a failure, never a silent pass.
	for _, m := range []struct{ tensor, stages string }{
		{c.rs.PixelValues, "pixel_values: preprocessing and the image tower"},
		{c.rs.InputIDs, "input_ids: the text tower"},
		{c.rs.Logits, "logits: zero-shot and end to end"},
	} {
		if m.tensor == "" {
			name, stages, _ := strings.Cut(m.stages, ": ")
			c.fail(StageRefSet, "%s: the bundle has no ref.%d.%s tensor, so %s cannot be checked", c.tag, c.rs.Index, name, stages)
		}
	}
	c.pixels()
	c.towers()
	c.zeroShot()
	c.endToEnd()
}

// pixels preprocesses each image file and compares it with the reference
// pixels.
func (c *refCheck) pixels() {
	S, nImg := c.info.ImageSize, len(c.rs.Images)
	if c.rs.PixelValues != "" {
		var err error
		if c.refPixels, err = tensorF32(c.b, c.rs.PixelValues, nImg*3*S*S); err != nil {
			c.fail(StagePixels, "%s pixels: %v", c.tag, err)
		}
	}
	c.filePixels = make([]float32, 0, nImg*3*S*S)
	c.filesOK = true
	for i, path := range c.rs.Images {
		file := c.rs.ImageFiles[i]
		px, err := c.proc.File(path)
		if err != nil {
			c.fail(StagePixels, "%s image %d %s: %v", c.tag, i, file, err)
			c.filesOK = false
			continue
		}
		if len(px) != 3*S*S {
			c.fail(StagePixels, "%s image %d %s: preprocessing gives %d values, the model takes 3x%dx%d", c.tag, i, file, len(px), S, S)
			c.filesOK = false
			continue
		}
		c.filePixels = append(c.filePixels, px...)
		if c.refPixels == nil {
			continue
		}
		v, err := compare.Values(px, c.refPixels[i*3*S*S:(i+1)*3*S*S])
		if err != nil {
			c.fail(StagePixels, "%s pixels %d %s: %v", c.tag, i, file, err)
			continue
		}
		res := CheckResult{Stage: StagePixels, RefSet: c.rs.Index, Values: &v,
			Message: fmt.Sprintf("%s pixels %d %s: %d of %d values differ (max |diff| %.3g)", c.tag, i, file, v.Differ, v.Values, v.MaxAbsDiff)}
		if strings.EqualFold(filepath.Ext(path), ".png") {
			res.Status = gateStatus(v.Differ == 0)
		} else {
			res.Message += " (not gated: JPEG and other decoders differ from Pillow's)"
		}
		c.add(res)
	}
}

// towers runs each tower on the reference's own inputs.
func (c *refCheck) towers() {
	nImg, nTxt, D, T := len(c.rs.Images), len(c.rs.Labels), c.info.Dim, c.info.Context
	if c.refPixels != nil {
		emb, err := c.model.EncodeImages(c.refPixels, nImg)
		if err != nil {
			c.fail(StageImageTower, "%s image tower: %v", c.tag, err)
		} else {
			c.imgEmb = emb
			c.embeddings(StageImageTower, c.tag+" image tower", c.rs.ImageEmbeds, emb, nImg, D, c.r.Gates.Image)
			c.compareBF16(StageImageTower, c.tag+" image tower", emb, nImg, func(b Backend) ([]float32, error) { return b.EncodeImages(c.refPixels, nImg) })
			if c.rs.NPUImageEmbeds != "" {
				c.npuApp(StageImageTower, c.tag+" image tower vs NPU app", c.rs.NPUImageEmbeds, emb, nImg, D)
			}
		}
	}
	if c.rs.InputIDs == "" {
		return
	}
	ids, err := tensorI32(c.b, c.rs.InputIDs)
	switch {
	case err != nil:
		c.fail(StageTextTower, "%s input ids: %v", c.tag, err)
		return
	case len(ids) != nTxt*T:
		c.fail(StageTextTower, "%s input ids: %d values, want %d prompts x %d", c.tag, len(ids), nTxt, T)
		return
	}
	c.refIDs = ids
	emb, err := c.model.EncodeTexts(ids, nTxt)
	if err != nil {
		c.fail(StageTextTower, "%s text tower: %v", c.tag, err)
		return
	}
	c.txtEmb = emb
	c.embeddings(StageTextTower, c.tag+" text tower", c.rs.TextEmbeds, emb, nTxt, D, c.r.Gates.Text)
	c.compareBF16(StageTextTower, c.tag+" text tower", emb, nTxt, func(b Backend) ([]float32, error) { return b.EncodeTexts(ids, nTxt) })
	if c.rs.NPUTextEmbeds != "" {
		c.npuApp(StageTextTower, c.tag+" text tower vs NPU app", c.rs.NPUTextEmbeds, emb, nTxt, D)
	}
}

// zeroShot compares the logits of the towers' embeddings with the
// reference's.
func (c *refCheck) zeroShot() {
	nImg, nTxt := len(c.rs.Images), len(c.rs.Labels)
	if c.rs.Logits != "" {
		var err error
		if c.refLogits, err = tensorF32(c.b, c.rs.Logits, nImg*nTxt); err != nil {
			c.fail(StageZeroShot, "%s logits: %v", c.tag, err)
		}
	}
	if c.refLogits == nil || c.imgEmb == nil || c.txtEmb == nil {
		return
	}
	what := c.tag + " zero-shot"
	got := Logits(c.imgEmb, c.txtEmb, nImg, nTxt, c.info.Dim, c.info.LogitScale)
	s, err := compare.Logits(got, c.refLogits, nImg, nTxt)
	if err != nil {
		c.fail(StageZeroShot, "%s: %v", what, err)
		return
	}
	c.add(CheckResult{Stage: StageZeroShot, Status: gateStatus(len(s.CheckTop1()) == 0), RefSet: c.rs.Index, Logits: &s,
		Message: fmt.Sprintf("%s: top-1 agrees on %d/%d images", what, s.Top1Agree, nImg)})
	// The logit values are gated for float32 numerics only; bf16 ones are
	// reported (top-1 is gated above), as taconite-clip's check does.
	res := CheckResult{Stage: StageZeroShot, RefSet: c.rs.Index, Logits: &s,
		Message: fmt.Sprintf("%s: max |logit diff| %.3g, max |probability diff| %.3g", what, s.MaxAbsDiff, s.MaxProbDiff)}
	if g := c.r.Gates; g.CheckLogitValues {
		res.Status = gateStatus(len(s.CheckValues(g.Logit)) == 0)
		res.Message += fmt.Sprintf(" (gate %g)", g.Logit)
	}
	c.add(res)
}

// endToEnd runs the image files and the label prompts, as a user runs
// classify, and compares top-1 with the reference logits.
func (c *refCheck) endToEnd() {
	nImg, nTxt := len(c.rs.Images), len(c.rs.Labels)
	if !c.filesOK || c.refLogits == nil || c.tok == nil || nTxt == 0 {
		if c.tok == nil || !c.filesOK {
			c.fail(StageEndToEnd, "%s end to end: not run (see the failures above)", c.tag)
		}
		return
	}
	prompts := make([]string, nTxt)
	for i, l := range c.rs.Labels {
		prompts[i] = FillTemplate(c.template, l)
	}
	ids := c.tok.EncodeBatch(prompts)
	txt, err := c.model.EncodeTexts(ids, nTxt)
	if err != nil {
		c.fail(StageEndToEnd, "%s end to end: %v", c.tag, err)
		return
	}
	if c.refIDs != nil {
		i := firstDiff(ids, c.refIDs)
		c.result(gateStatus(i < 0), StagePrompts, c.rs.Index, "%s label prompts (template %q) tokenize to the reference input ids%s", c.tag, c.template, diffNote(i, ids, c.refIDs))
	}
	img, err := c.model.EncodeImages(c.filePixels, nImg)
	if err != nil {
		c.fail(StageEndToEnd, "%s end to end: %v", c.tag, err)
		return
	}
	got := Logits(img, txt, nImg, nTxt, c.info.Dim, c.info.LogitScale)
	s, err := compare.Logits(got, c.refLogits, nImg, nTxt)
	if err != nil {
		c.fail(StageEndToEnd, "%s end to end: %v", c.tag, err)
		return
	}
	c.add(CheckResult{Stage: StageEndToEnd, Status: gateStatus(len(s.CheckTop1()) == 0), RefSet: c.rs.Index, Logits: &s,
		Message: fmt.Sprintf("%s end to end from files: zero-shot top-1 agrees on %d/%d images", c.tag, s.Top1Agree, nImg)})
}

// embeddings gates each row against the reference tensor name: cosine,
// relative error and max |diff|.
func (c *refCheck) embeddings(stage CheckStage, what, name string, got []float32, n, dim int, g compare.Gate) {
	if name == "" {
		c.fail(stage, "%s: the bundle has no reference embeddings, so it cannot be checked", what)
		return
	}
	ref, err := tensorF32(c.b, name, n*dim)
	if err != nil {
		c.fail(stage, "%s: %v", what, err)
		return
	}
	s, err := compare.Embeddings(got, ref, n, dim)
	if err != nil {
		c.fail(stage, "%s: %v", what, err)
		return
	}
	v := s.Check(g)
	why := ""
	if len(v) > 0 {
		why = ": " + strings.Join(v, "; ")
	}
	c.add(CheckResult{Stage: stage, Status: gateStatus(len(v) == 0), RefSet: c.rs.Index, Embeddings: &s, Gate: &g,
		Message: fmt.Sprintf("%s: cosine min %.7f mean %.7f (gate %g), rel err max %.3g (gate %g), max |diff| %.3g (%.3g of max |ref|, gate %g) over %d rows%s",
			what, s.MinCosine, s.MeanCosine, g.MinCosine, s.MaxRelErr, g.MaxRelErr, s.MaxAbsDiff, s.DiffRatio(), g.MaxDiff, n, why)})
}

// npuApp reports, without gating, how close the tower is to the NPU app's
// output.
func (c *refCheck) npuApp(stage CheckStage, what, name string, got []float32, n, dim int) {
	ref, err := tensorF32(c.b, name, n*dim)
	if err != nil {
		c.result(CheckInfo, stage, c.rs.Index, "%s: %v", what, err)
		return
	}
	s, err := compare.Embeddings(got, ref, n, dim)
	if err != nil {
		c.result(CheckInfo, stage, c.rs.Index, "%s: %v", what, err)
		return
	}
	c.add(CheckResult{Stage: stage, Status: CheckInfo, RefSet: c.rs.Index, Embeddings: &s,
		Message: fmt.Sprintf("%s: cosine min %.6f mean %.6f, rel err max %.3g, max |diff| %.3g", what, s.MinCosine, s.MeanCosine, s.MaxRelErr, s.MaxAbsDiff)})
}

// tensorF32 reads a float32 tensor of want values.
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

// at is v[i], or -1 past its end.
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

// short trims a long text for a one-line result.
func short(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}
