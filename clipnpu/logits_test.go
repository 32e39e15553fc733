package clipnpu

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

func TestEOSPosition(t *testing.T) {
	for _, c := range []struct {
		ids  []int32
		eos  int32
		want int
	}{
		{[]int32{49406, 320, 49407, 49407, 49407}, 49407, 2}, // first EOS, padding with EOS
		{[]int32{5, 9, 7, 9}, 9, 1},
		{[]int32{5, 6, 7}, 9, 0},                    // no EOS: position 0, as HF's argmax of zeros
		{[]int32{49406, 2, 320, 49407, 0, 0}, 2, 3}, // legacy eos_token_id 2: argmax of the ids
		{[]int32{7, 9, 9}, 2, 1},                    // argmax takes the first maximum
	} {
		if got := EOSPosition(c.ids, c.eos); got != c.want {
			t.Errorf("eosPosition(%v, %d) = %d, want %d", c.ids, c.eos, got, c.want)
		}
	}
}
