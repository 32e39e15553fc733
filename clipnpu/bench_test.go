package clipnpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBenchFLOPs checks the FLOP count against the figures for
// ViT-H/14 (334.6 GFLOP an image, 47.1 a 77-token prompt) and the usual
// 4.4 GMAC of a ViT-B/32 image.
func TestBenchFLOPs(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64 // GFLOP
		tol       float64
	}{
		{"h14 image", ViTH14Config().ImageFLOPs() / 1e9, 334.6, 0.05},
		{"h14 text", ViTH14Config().TextFLOPs(77) / 1e9, 47.1, 0.05},
		{"b32 image", ViTB32Config().ImageFLOPs() / 1e9, 8.8, 0.05},
	}
	for _, tc := range tests {
		if math.Abs(tc.got-tc.want) > tc.tol {
			t.Errorf("%s: %.3f GFLOP, want %.1f", tc.name, tc.got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tc := range tests {
		in := append([]float64(nil), tc.in...)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %g, want %g", tc.in, got, tc.want)
		}
		for i := range in { // the input is not reordered
			if in[i] != tc.in[i] {
				t.Fatalf("median reordered its input: %v", tc.in)
			}
		}
	}
}

func TestBenchPrompts(t *testing.T) {
	c := ViTH14Config().Text
	for _, tokens := range []int{2, 9, 77, 100} {
		ids := benchPrompts(rand.New(rand.NewPCG(1, 2)), 5, tokens, c)
		if len(ids) != 5*c.Context {
			t.Fatalf("%d ids, want %d", len(ids), 5*c.Context)
		}
		eos := min(tokens, c.Context) - 1
		for b := 0; b < 5; b++ {
			seq := ids[b*c.Context : (b+1)*c.Context]
			if seq[0] != 49406 {
				t.Errorf("tokens %d prompt %d starts with %d, want BOS", tokens, b, seq[0])
			}
			for j := 1; j < c.Context; j++ {
				id := seq[j]
				switch {
				case j >= eos && id != c.EOS:
					t.Errorf("tokens %d prompt %d position %d: id %d, want EOS", tokens, b, j, id)
				case j < eos && (id < 0 || id >= 49406):
					t.Errorf("tokens %d prompt %d position %d: id %d, want a word", tokens, b, j, id)
				}
			}
		}
	}
}

// TestBenchRefusesEmptyPlans: without a timed pass or a tower to time, the
// medians and rates would be NaN or Inf (and unprintable as JSON), so Bench
// refuses before it touches the backend.
func TestBenchRefusesEmptyPlans(t *testing.T) {
	for _, o := range []BenchOptions{
		{Images: 4, Texts: 8, Runs: 0},
		{Images: 0, Texts: 0, Runs: 3},
		{Images: -1, Texts: 8, Runs: 3},
		{Images: 4, Texts: -2, Runs: 3},
	} {
		if res, err := Bench(nil, Config{}, o); err == nil {
			t.Errorf("Bench(%+v) = %+v, want an error", o, res)
		}
	}
}
