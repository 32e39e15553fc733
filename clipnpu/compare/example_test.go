package compare_test

import (
	"fmt"

	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/clipnpu/core"
)

// A backend whose embeddings come out 1 % too long points the right way
// (cosine 1) and still fails the float32 gates.
func ExampleEmbeddings() {
	want := []float32{0.3, -1.2, 0.8, 2.0} // one row of 4
	got := make([]float32, len(want))
	for i, x := range want {
		got[i] = 1.01 * x
	}
	s, err := compare.Embeddings(got, want, 1, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	gates, err := compare.For(core.Info{Device: core.DeviceCPU})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("cosine %.6f, relative error %.3f\n", s.MinCosine, s.MaxRelErr)
	for _, v := range s.Check(gates.Image) {
		fmt.Println(v)
	}
	// Output:
	// cosine 1.000000, relative error 0.010
	// relative error 0.01 (row 0) > 3e-05
	// max |diff| 0.02 is 0.01 of the largest reference value 2, > 3e-05
}
