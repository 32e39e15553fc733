package bundle_test

import (
	"fmt"
	"os"

	"github.com/clipidx/clipidx/clipnpu/bundle"
)

func Example() {
	dir, _ := os.MkdirTemp("", "bundle-example")
	defer os.RemoveAll(dir)

	// Write a small bundle, as the tests of the NPU replay do.
	w := bundle.NewWriter()
	w.Param("embed_dim", 2)
	w.Line("tok_test", "0", bundle.Escape("café"))
	w.I32("tok.0.ids", []int{3}, []int32{49406, 1000, 49407})
	if err := w.Write(dir); err != nil {
		fmt.Println(err)
		return
	}

	b, err := bundle.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	d, _ := b.ParamInt("embed_dim")
	fmt.Println("embed_dim", d)
	for _, tt := range b.TokTests() {
		t, _ := b.Tensor(tt.IDs)
		ids, _ := t.I32()
		fmt.Printf("tok_test %d %q %v\n", tt.Index, tt.Text, ids)
	}
	// Output:
	// embed_dim 2
	// tok_test 0 "café" [49406 1000 49407]
}
