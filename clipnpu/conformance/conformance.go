// Package conformance is the one test suite every clipnpu backend runs (the
// reference forward, the fast CPU path, the NPU replay): embeddings against
// reference outputs of an independent implementation, logits, zero-shot
// top-1, batch independence and the Backend error contract, at the gates
// package compare chooses (cosine, relative error and max |diff|: a scaled
// embedding fails, not only a turned one).
//
// A backend's test calls
//
//	conformance.Run(t, func(t *testing.T, dir string) clipnpu.Backend {
//		b, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu"})
//		if err != nil {
//			t.Fatal(err)
//		}
//		return b
//	}, conformance.F32CPU())
//
// Run uses the shared tiny-clip-h fixture; RunDir takes any folder in the
// same form (reference.json in format clip-reference-v1 and the pixel files
// it names).
package conformance

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// Tolerance says how close a backend must come to the reference: the
// gates of package compare, where every bound is chosen and explained.
type Tolerance = compare.Gates

// F32CPU is the bar for a float32 CPU forward (compare.F32CPU).
func F32CPU() Tolerance { return compare.F32CPU() }

// F16Weights is the bar for the float32 CPU forward on float32 weights
// rounded to binary16 at load (compare.F16Weights).
func F16Weights() Tolerance { return compare.F16Weights() }

// NPU is the bar for a bundle's bf16 numerics, on the NPU or emulated on
// the CPU (compare.NPU).
func NPU() Tolerance { return compare.NPU() }

// Reference is a fixture's reference.json (format clip-reference-v1), the
// parts the suite reads.
type Reference struct {
	Format         string  `json:"format"`
	LogitScaleExp  float64 `json:"logit_scale_exp"`
	ContextLength  int     `json:"context_length"`
	Texts          []RefText
	Images         []RefImage
	LogitsPerImage map[string]map[string]float64 `json:"logits_per_image"`
	ZeroShotTop1   map[string]string             `json:"zero_shot_top1"`
}

// RefText is one reference prompt.
type RefText struct {
	Name       string    `json:"name"`
	Text       string    `json:"text"`
	IDs        []int32   `json:"ids"`
	TextEmbeds []float32 `json:"text_embeds"`
}

// RefImage is one reference image; Pixels is loaded from PixelFile.
type RefImage struct {
	Name        string    `json:"name"`
	File        string    `json:"file"`
	PixelFile   string    `json:"pixel_values_file"`
	PixelShape  []int     `json:"pixel_values_shape"`
	ImageEmbeds []float32 `json:"image_embeds"`
	Pixels      []float32 `json:"-"`
}

// Pixels is the pixels of every reference image back to back, the batch
// [len(Images), 3, S, S] that EncodeImages takes.
func (r *Reference) Pixels() []float32 {
	var px []float32
	for _, im := range r.Images {
		px = append(px, im.Pixels...)
	}
	return px
}

// IDs is the token ids of every reference prompt back to back, the batch
// [len(Texts), context] that EncodeTexts takes.
func (r *Reference) IDs() []int32 {
	var ids []int32
	for _, tx := range r.Texts {
		ids = append(ids, tx.IDs...)
	}
	return ids
}

// ReadReference loads dir/reference.json and the pixel tensors it names.
func ReadReference(dir string) (*Reference, error) {
	path := filepath.Join(dir, "reference.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Reference
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if r.Format != "clip-reference-v1" {
		return nil, fmt.Errorf("%s: format %q, want clip-reference-v1", path, r.Format)
	}
	for i := range r.Images {
		im := &r.Images[i]
		p := filepath.Join(dir, im.PixelFile)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		want := 1
		for _, d := range im.PixelShape {
			want *= d
		}
		if len(b) != 4*want {
			return nil, fmt.Errorf("%s: %d bytes, want %d for shape %v", p, len(b), 4*want, im.PixelShape)
		}
		im.Pixels = make([]float32, want)
		for j := range im.Pixels {
			im.Pixels[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
		}
	}
	return &r, nil
}

// Run runs the suite on the shared tiny-clip-h fixture (skipped when the
// shared data is absent, failing under CI=true).
func Run(t *testing.T, open func(t *testing.T, dir string) clipnpu.Backend, tol Tolerance) {
	RunDir(t, fixtures.TinyModel(t), open, tol)
}

// RunDir runs the suite on the model folder dir, which holds
// reference.json beside the model.
func RunDir(t *testing.T, dir string, open func(t *testing.T, dir string) clipnpu.Backend, tol Tolerance) {
	ref, err := ReadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := open(t, dir)
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	info := b.Info()
	D := len(ref.Images[0].ImageEmbeds)
	if info.Dim != D {
		t.Fatalf("Info().Dim = %d, reference embeddings have %d", info.Dim, D)
	}
	if s := ref.Images[0].PixelShape; len(s) != 3 || s[0] != 3 || s[1] != info.ImageSize || s[2] != info.ImageSize {
		t.Fatalf("Info().ImageSize = %d, reference pixels are %v", info.ImageSize, s)
	}
	if info.Context != len(ref.Texts[0].IDs) {
		t.Fatalf("Info().Context = %d, reference ids have %d", info.Context, len(ref.Texts[0].IDs))
	}
	if d := math.Abs(float64(info.LogitScale)-ref.LogitScaleExp) / ref.LogitScaleExp; d > 1e-5 {
		t.Errorf("Info().LogitScale = %g, reference exp(logit_scale) = %g", info.LogitScale, ref.LogitScaleExp)
	}

	pixels, ids := ref.Pixels(), ref.IDs()
	img, err := b.EncodeImages(pixels, len(ref.Images))
	if err != nil {
		t.Fatalf("EncodeImages: %v", err)
	}
	txt, err := b.EncodeTexts(ids, len(ref.Texts))
	if err != nil {
		t.Fatalf("EncodeTexts: %v", err)
	}
	if len(img) != len(ref.Images)*D || len(txt) != len(ref.Texts)*D {
		t.Fatalf("got %d image and %d text values, want %d and %d", len(img), len(txt), len(ref.Images)*D, len(ref.Texts)*D)
	}

	t.Run("GateSelection", func(t *testing.T) {
		// The bar the test chose is the one compare picks for this
		// backend, so check and the suite hold it to the same gates.
		g, err := compare.For(info)
		if err != nil {
			t.Fatal(err)
		}
		if g != tol {
			t.Errorf("compare.For(Info{Device: %q, Rounded: %q, Precision: %q}) = %+v, the test runs at %+v", info.Device, info.Rounded, info.Precision, g, tol)
		}
	})
	t.Run("ImageEmbeddings", func(t *testing.T) {
		for i, im := range ref.Images {
			checkEmbedding(t, "image "+im.Name, img[i*D:(i+1)*D], im.ImageEmbeds, tol.Image)
		}
	})
	t.Run("TextEmbeddings", func(t *testing.T) {
		for i, tx := range ref.Texts {
			checkEmbedding(t, "text "+tx.Name, txt[i*D:(i+1)*D], tx.TextEmbeds, tol.Text)
		}
	})
	t.Run("LogitsAndZeroShot", func(t *testing.T) {
		nImg, nTxt := len(ref.Images), len(ref.Texts)
		logits := clipnpu.Logits(img, txt, nImg, nTxt, D, info.LogitScale)
		want := make([]float32, 0, nImg*nTxt)
		for _, im := range ref.Images {
			row, ok := ref.LogitsPerImage[im.Name]
			if !ok {
				t.Fatalf("reference has no logits for image %s", im.Name)
			}
			for _, tx := range ref.Texts {
				l, ok := row[tx.Name]
				if !ok {
					t.Fatalf("reference has no logit for image %s and text %s", im.Name, tx.Name)
				}
				want = append(want, float32(l))
			}
		}
		s, err := compare.Logits(logits, want, nImg, nTxt)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range s.CheckValues(tol.Logit) {
			t.Errorf("logits: %s", v)
		}
		for i, im := range ref.Images {
			if w := ref.ZeroShotTop1[im.Name]; w != "" && ref.Texts[s.Top1[i]].Name != w {
				t.Errorf("zero-shot top-1 of %s = %s, reference %s", im.Name, ref.Texts[s.Top1[i]].Name, w)
			}
		}
		t.Logf("max |logit diff| %.3g, max |probability diff| %.3g", s.MaxAbsDiff, s.MaxProbDiff)
	})
	t.Run("BatchIndependence", func(t *testing.T) {
		checkBatch(t, b, ref, img, txt, D, tol.Batch)
	})
	t.Run("ErrorContract", func(t *testing.T) {
		checkContract(t, b, info)
	})
}

// checkEmbedding compares one embedding with its reference.
func checkEmbedding(t *testing.T, what string, got, want []float32, g compare.Gate) {
	t.Helper()
	compareRows(t, what, got, want, 1, g)
}

// compareRows compares got with want, both [n, len/n], at gate g.
func compareRows(t *testing.T, what string, got, want []float32, n int, g compare.Gate) {
	t.Helper()
	if len(want) != len(got) || n <= 0 || len(got)%n != 0 {
		t.Errorf("%s: reference has %d values, backend %d, in %d rows", what, len(want), len(got), n)
		return
	}
	s, err := compare.Embeddings(got, want, n, len(got)/n)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	t.Logf("%s: 1-cosine %.2g, rel err %.2g, max |diff| %.3g (%.2g of max |ref|)", what, 1-s.MinCosine, s.MaxRelErr, s.MaxAbsDiff, s.DiffRatio())
	for _, v := range s.Check(g) {
		t.Errorf("%s: %s", what, v)
	}
}

// checkBatch embeds the first item alone and in the middle of a batch of 3.
func checkBatch(t *testing.T, b clipnpu.Backend, ref *Reference, img, txt []float32, D int, g compare.Gate) {
	if len(ref.Images) < 3 || len(ref.Texts) < 3 {
		t.Skip("fixture has fewer than 3 images or texts")
	}
	alone, err := b.EncodeImages(ref.Images[0].Pixels, 1)
	if err != nil {
		t.Fatal(err)
	}
	var batch []float32
	for _, i := range []int{2, 0, 1} {
		batch = append(batch, ref.Images[i].Pixels...)
	}
	three, err := b.EncodeImages(batch, 3)
	if err != nil {
		t.Fatal(err)
	}
	talone, err := b.EncodeTexts(ref.Texts[0].IDs, 1)
	if err != nil {
		t.Fatal(err)
	}
	var tb []int32
	for _, i := range []int{2, 0, 1} {
		tb = append(tb, ref.Texts[i].IDs...)
	}
	tthree, err := b.EncodeTexts(tb, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		a, b []float32
	}{
		{"image 0 alone vs in the full batch", alone, img[:D]},
		{"image 0 alone vs in a batch of 3", alone, three[D : 2*D]},
		{"image 2 in a batch of 3 vs in the full batch", three[:D], img[2*D : 3*D]},
		{"text 0 alone vs in the full batch", talone, txt[:D]},
		{"text 0 alone vs in a batch of 3", talone, tthree[D : 2*D]},
		{"text 2 in a batch of 3 vs in the full batch", tthree[:D], txt[2*D : 3*D]},
	} {
		compareRows(t, c.what, c.a, c.b, 1, g)
	}
}

// checkContract checks n == 0 and malformed inputs.
func checkContract(t *testing.T, b clipnpu.Backend, info clipnpu.Info) {
	per := 3 * info.ImageSize * info.ImageSize
	if out, err := b.EncodeImages(nil, 0); err != nil || out == nil || len(out) != 0 {
		t.Errorf("EncodeImages(nil, 0) = %d values, %v; want an empty slice and no error", len(out), err)
	}
	if out, err := b.EncodeTexts(nil, 0); err != nil || out == nil || len(out) != 0 {
		t.Errorf("EncodeTexts(nil, 0) = %d values, %v; want an empty slice and no error", len(out), err)
	}
	for _, c := range []struct {
		name string
		n    int
		len  int
	}{
		{"one value short", 1, per - 1},
		{"one value long", 1, per + 1},
		{"two images declared, one given", 2, per},
		{"negative n", -1, 0},
	} {
		out, err := b.EncodeImages(make([]float32, c.len), c.n)
		if err == nil || out != nil {
			t.Errorf("EncodeImages %s: got %d values, err %v; want nil and an error", c.name, len(out), err)
		}
	}
	for _, c := range []struct {
		name string
		n    int
		len  int
	}{
		{"one id short", 1, info.Context - 1},
		{"two texts declared, one given", 2, info.Context},
		{"negative n", -1, 0},
	} {
		ids := make([]int32, c.len)
		out, err := b.EncodeTexts(ids, c.n)
		if err == nil || out != nil {
			t.Errorf("EncodeTexts %s: got %d values, err %v; want nil and an error", c.name, len(out), err)
		}
	}
}
