package clipnpu

import (
	"testing"

	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/mmap"
)

// TestPacksStoredF32: only the fast CPU path in float32 packs, where the
// kernel gains by it and the file is mapped.
func TestPacksStoredF32(t *testing.T) {
	can := gemm.PackPays() && mmap.Mapped
	for _, c := range []struct {
		opts Options
		want bool
	}{
		{Options{}, can},
		{Options{Device: "cpu", Precision: "f32"}, can},
		{Options{Device: "auto"}, can},
		{Options{Device: "reference"}, false},
		{Options{Device: "npu"}, false},
		{Options{Precision: "bf16"}, false},
	} {
		if got := PacksStoredF32(c.opts); got != c.want {
			t.Errorf("PacksStoredF32(%+v) = %v, want %v", c.opts, got, c.want)
		}
	}
}
