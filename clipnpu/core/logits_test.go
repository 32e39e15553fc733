package core

import (
	"math"
	"testing"
)

func TestLogitsAndNormalize(t *testing.T) {
	img := []float32{3, 4, 0, 0}         // [2, 2]: (3,4) and a zero vector
	txt := []float32{1, 0, 0, 2, -6, -8} // [3, 2]
	got := Logits(img, txt, 2, 3, 2, 10)
	want := []float32{10 * 0.6, 10 * 0.8, -10, 0, 0, 0}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Errorf("logit %d = %v, want %v", i, got[i], want[i])
		}
	}
	v := []float32{3, 4, 0, 0, 1, 1}
	Normalize(v, 2)
	for i, w := range []float32{0.6, 0.8, 0, 0, float32(math.Sqrt(0.5)), float32(math.Sqrt(0.5))} {
		if math.Abs(float64(v[i]-w)) > 1e-6 {
			t.Errorf("Normalize[%d] = %v, want %v", i, v[i], w)
		}
	}
}
