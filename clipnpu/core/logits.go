package core

import "math"

// Logits returns [nImg, nTxt] = logitScale · cosine(img[i], txt[j]) for
// img [nImg, dim] and txt [nTxt, dim] (not necessarily normalised), as
// HF's logits_per_image. A zero vector has cosine 0 with everything.
func Logits(img, txt []float32, nImg, nTxt, dim int, logitScale float32) []float32 {
	inv := func(v []float32, n int) []float64 {
		r := make([]float64, n)
		for i := range r {
			var s float64
			for _, x := range v[i*dim : (i+1)*dim] {
				s += float64(x) * float64(x)
			}
			if s > 0 {
				r[i] = 1 / math.Sqrt(s)
			}
		}
		return r
	}
	ii, it := inv(img, nImg), inv(txt, nTxt)
	out := make([]float32, nImg*nTxt)
	for i := 0; i < nImg; i++ {
		for j := 0; j < nTxt; j++ {
			d := Dot64(img[i*dim:(i+1)*dim], txt[j*dim:(j+1)*dim])
			out[i*nTxt+j] = float32(float64(logitScale) * d * ii[i] * it[j])
		}
	}
	return out
}

// Normalize scales each row of v [n, dim] to unit L2 length in place; zero
// rows stay zero.
func Normalize(v []float32, dim int) {
	if dim <= 0 {
		return
	}
	for r := 0; r+dim <= len(v); r += dim {
		row := v[r : r+dim]
		var s float64
		for _, x := range row {
			s += float64(x) * float64(x)
		}
		if s == 0 {
			continue
		}
		inv := 1 / math.Sqrt(s)
		for i, x := range row {
			row[i] = float32(float64(x) * inv)
		}
	}
}

// Softmax turns one row of logits into probabilities (in float64,
// max-subtracted).
func Softmax(logits []float32) []float64 {
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
