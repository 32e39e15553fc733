// Package cliptest holds inputs shared by the tests of clipnpu's packages.
package cliptest

import (
	"math"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// Inputs makes n deterministic images and texts for cfg: pixels [n, 3, S, S]
// and ids [n, T], each text ending at a different position.
func Inputs(cfg core.Config, n int) ([]float32, []int32) {
	S, T := cfg.Vision.ImageSize, cfg.Text.Context
	px := make([]float32, n*3*S*S)
	for i := range px {
		px[i] = float32(math.Sin(float64(i)*0.37)) * 1.5
	}
	ids := make([]int32, n*T)
	for i := 0; i < n; i++ {
		for p := 0; p < T; p++ {
			ids[i*T+p] = int32((i*7 + p*3 + 1) % (cfg.Text.Vocab - 1))
		}
		ids[i*T+2+i%(T-2)] = cfg.Text.EOS
	}
	return px, ids
}
