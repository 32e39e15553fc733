package video

import (
	"math"
	"testing"
)

// TestParseKeyframeGap: the longest keyframe spacing is read from packets
// in decoding order (B-frames make the times go back), the stretch after
// the last keyframe counts, and unreadable lines are skipped.
func TestParseKeyframeGap(t *testing.T) {
	for _, c := range []struct {
		name, out string
		want      float64
	}{
		{"every second, B-frames", "0.000000,K__\n0.120000,___\n0.040000,___\n0.080000,___\n1.000000,K__\n1.120000,___\n1.040000,___\n2.000000,K_\n2.080000,__\n", 1},
		{"one keyframe then a long stretch", "0.000000,K__\n0.040000,___\n7.960000,___\n", 7.96},
		{"widest gap in the middle", "0,K_\n1,K_\n4.5,K_\n5.5,K_\n5.6,__\n", 3.5},
		{"keyframes out of order", "2,K_\n0,K_\n1,K_\n", 1},
		{"unreadable times", "N/A,K_\n0,K_\n\nN/A,__\n1.5,K_\nnonsense\n", 1.5},
		{"no keyframe", "0,__\n1,__\n", 0},
		{"nothing", "", 0},
	} {
		if got := parseKeyframeGap(c.out); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: gap %g, want %g", c.name, got, c.want)
		}
	}
}
