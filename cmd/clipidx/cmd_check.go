package main

// `clipidx check [DIR]`: runs clipnpu.Check (every stage of the pipeline
// against a bundle's reference records) and prints one line per result.

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/gemm"
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

The label prompts are made with the manifest's prompt_template param (how
the reference logits were made), else the model's template; an [info] line
names the template and says when classify's default differs from it.

It prints one line per result ([ok], [FAIL] or [info]) and ends with
ALL CHECKS PASSED (exit 0) or SOME CHECKS FAILED (exit 1). A missing
reference (no refset record, a tok_test without its tok.<i>.ids tensor, a
reference set without one of its tensors) fails the stages it leaves
unchecked: a skipped stage never counts as a pass.

The towers run in float32 unless --precision (or CLIPIDX_PRECISION) says
otherwise: check is about the numbers. On a CPU with a bf16 kernel (AMX or
AVX512_BF16) it also runs each tower in bf16 on the reference inputs and
reports, as info, the cosine of those embeddings to the float32 ones: what
--precision bf16 (or auto) changes on this model.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defaultF32(cmd.Flags().Changed("precision"))
			dir := g.model
			if len(args) == 1 {
				dir = args[0]
			}
			w := cmd.OutOrStdout()
			g.model = dir // explainModel names the checked folder
			opts := modelOptions(clipnpu.BothTowers)
			// Where the CPU has a bf16 kernel, a float32 check also says
			// how far bf16 (what auto may pick) lies from it.
			_, noBF16 := gemm.BF16Kernel()
			compareBF16 := noBF16 == nil && opts.Precision == "f32" && modelOnCPU()
			r, err := clipnpu.Check(dir, clipnpu.CheckOptions{
				OpenOptions: clipnpu.OpenOptions{Options: opts, Explain: explainModel},
				CompareBF16: compareBF16,
				OnResult: func(res clipnpu.CheckResult) {
					fmt.Fprintf(w, "%s%s\n", checkMark[res.Status], res.Message)
				},
			})
			if err != nil {
				return err
			}
			passed, failed := r.Passed(), r.Failed()
			if failed > 0 {
				fmt.Fprintf(w, "SOME CHECKS FAILED (%d failed, %d passed)\n", failed, passed)
				return &exitError{code: 1, err: fmt.Errorf("check %s: %d %s failed", dir, failed, plural(failed, "check", "checks"))}
			}
			if passed == 0 {
				fmt.Fprintln(w, "SOME CHECKS FAILED (nothing was checked)")
				return &exitError{code: 1, err: fmt.Errorf("check %s: the folder holds no reference records (tok_test, refset)", dir)}
			}
			fmt.Fprintf(w, "ALL CHECKS PASSED (%d %s)\n", passed, plural(passed, "check", "checks"))
			return nil
		},
	}
}

// checkMark starts each result line.
var checkMark = map[clipnpu.CheckStatus]string{
	clipnpu.CheckOK:   "[ok]   ",
	clipnpu.CheckFail: "[FAIL] ",
	clipnpu.CheckInfo: "[info] ",
}
