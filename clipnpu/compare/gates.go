package compare

import (
	"fmt"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// Gates are the bounds one way of running the model is held to.
type Gates struct {
	// Numerics names the arithmetic the gates are for, for reports.
	Numerics string
	// Image and Text bound each tower's embeddings against an independent
	// float32 reference (PyTorch's, or the reference forward's).
	Image, Text Gate
	// Batch bounds an item embedded alone against the same item inside a
	// batch, on the same backend.
	Batch Gate
	// Logit is the largest |logit − reference logit|, at the reference's
	// logit scale (100 for CLIP: a logit is 100·cosine).
	Logit float64
	// CheckLogitValues says whether `clipidx check` gates the logit values
	// of a bundle's reference sets at Logit (float32 numerics) or only
	// reports them, gating top-1 (bf16 numerics, as taconite-clip's own
	// check does). The conformance suite gates Logit either way.
	CheckLogitValues bool
}

// For chooses the gates from how the model runs: the NPU and its CPU
// emulation (Device "npu", core.DeviceEmulatedNPU) and a bf16 CPU
// precision get the bf16 bars, float32 weights rounded to f16 at load the
// f16 bars, every other CPU run the float32 ones. A precision or rounding
// it has no gates for is an error.
func For(info core.Info) (Gates, error) {
	if strings.HasPrefix(info.Device, "npu") || info.Device == core.DeviceEmulatedNPU {
		return NPU(), nil
	}
	switch info.Precision {
	case "", "f32":
	case "bf16":
		return BF16CPU(), nil
	default:
		return Gates{}, fmt.Errorf("compare: no gates for precision %q on %s", info.Precision, info.Device)
	}
	switch info.Rounded {
	case "":
		return F32CPU(), nil
	case "f16":
		return F16Weights(), nil
	}
	return Gates{}, fmt.Errorf("compare: no gates for weights rounded to %q", info.Rounded)
}

// Every bound below is written once, here. "Measured" figures are the worst
// over all rows of `go test -v -run 'Conformance|UnseenModels|FastMatches'
// ./clipnpu/` (the shared tiny-clip-h fixture against its PyTorch
// references, the unseen-model fixtures in clipnpu/testdata, the fast path
// against the reference forward on random weights of several shapes), and
// of the fast path against the reference forward on a random ViT-B/32
// (12 layers: 8e-7, the error did not grow with depth); Intel Xeon
// (Sapphire Rapids), December 2026 (with -tags purego the float32 worst is
// 2.0e-6 instead of 1.8e-6). A measure is "rel err" ‖got−want‖/‖want‖
// of a row and "max |diff|" as a fraction of the largest reference value.

// f32 is the float32 gate:
//   - cosine 0.99999: taconite-clip's bar for float32 runs (measured
//     1-cosine ≤ 1.6e-12);
//   - rel err 3e-5: measured ≤ 1.8e-6 (fast path, tiny-clip-h image
//     tower), 17x; a scale error beyond 3e-5 fails, where the cosine alone
//     accepts 0.45 %;
//   - max |diff| 3e-5 of the largest value: measured ≤ 1.4e-6, 20x.
//
// It is also every backend's batch gate (an item alone against the same
// item in a batch): all of them measured 0 (bit-identical); the float32
// bound keeps a summation order that follows the batch size legal.
var f32 = Gate{MinCosine: 0.99999, MaxRelErr: 3e-5, MaxDiff: 3e-5}

// F32CPU is the bar for a float32 forward on the CPU (the reference or the
// fast path): the f32 gate for both towers and batches, and logits within
// 1e-3, taconite-clip's bar (measured 5.5e-5 at logit scale 100).
func F32CPU() Gates {
	return Gates{Numerics: "float32", Image: f32, Text: f32, Batch: f32, Logit: 1e-3, CheckLogitValues: true}
}

// F16Weights is the bar for the float32 CPU forward on float32 weights
// rounded to binary16 at load (Info.Rounded "f16"):
//   - cosine: the float32 bar, kept (measured 1-cosine ≤ 2.5e-6);
//   - rel err 1e-2: measured ≤ 9.9e-4 image, 2.3e-3 text (4x the text
//     tower); the cosine bar alone allows a direction error of
//     √(2·1e-5) = 4.5e-3, so this adds at most ~0.5 % of scale;
//   - max |diff| 2e-2 of the largest value: measured ≤ 1.0e-3 image,
//     2.6e-3 text (8x);
//   - logits 0.2: a logit multiplies a difference of two cosines by the
//     logit scale (100 on the fixture): measured 0.078.
func F16Weights() Gates {
	g := Gate{MinCosine: f32.MinCosine, MaxRelErr: 1e-2, MaxDiff: 2e-2}
	return Gates{Numerics: "float32 on f16-rounded weights", Image: g, Text: g, Batch: f32, Logit: 0.2, CheckLogitValues: true}
}

// NPU is the bar for a taconite bundle's bf16 and bfp16ebs8 numerics, on
// the NPU or emulated on the CPU (measured on the emulation of the tiny-clip-h
// export; the replay has not run on hardware):
//   - cosine 0.999 image, 0.998 text: the bars taconite-clip holds the real
//     NPU to (measured 1-cosine ≤ 7.3e-4 image, 1.1e-3 text);
//   - rel err 0.1 image, 0.15 text: measured ≤ 0.039 and 0.049 (2.5x and
//     3x, about twice the direction error the cosine bars allow, √(2·1e-3)
//     = 0.045 and √(2·2e-3) = 0.063);
//   - max |diff| 0.1 and 0.15 of the largest value: measured ≤ 0.023 and
//     0.048;
//   - logits 2.0: logits are 100·cosine on the fixture, so a 1e-3 cosine
//     error moves one by up to ~1.5 (measured 1.57); `check` reports them
//     and gates top-1, as taconite-clip's check does.
func NPU() Gates {
	return Gates{
		Numerics: "bf16 (NPU kernels)",
		Image:    Gate{MinCosine: 0.999, MaxRelErr: 0.1, MaxDiff: 0.1},
		Text:     Gate{MinCosine: 0.998, MaxRelErr: 0.15, MaxDiff: 0.15},
		Batch:    f32,
		Logit:    2.0,
	}
}

// BF16CPU is the bar for a CPU forward computing in bf16 (Info.Precision
// "bf16"): the NPU's cosines (0.999 image, 0.998 text: `check` holds a
// bf16 run to what it holds an NPU run to), with the size of the error
// bounded from what bf16 measures against float32 on the same weights:
// relative error at most 0.013 (images) and 0.015 (texts), max |diff| at
// most 0.016 of max |ref|, on tiny-clip-h and the unseen-model fixtures
// (TestBF16Precision), so the bounds below leave a 3-4x margin.
func BF16CPU() Gates {
	g := NPU()
	g.Numerics = "bf16 (CPU)"
	g.Image.MaxRelErr, g.Image.MaxDiff = 0.05, 0.06
	g.Text.MaxRelErr, g.Text.MaxDiff = 0.05, 0.06
	return g
}
