package preprocess_test

import (
	"errors"
	"fmt"

	"github.com/clipidx/clipidx/preprocess"
)

// A model folder's preprocessor_config.json gives the sizes and
// normalisation (LoadConfig); DefaultConfig is the laion ViT-H/14 one.
func Example() {
	p := preprocess.New(preprocess.DefaultConfig(), preprocess.Options{})
	pixels, err := p.File("testdata/images/orient6.jpg") // a phone photo, stored sideways
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(pixels), "values: [3, 224, 224]")

	jxl := []byte("\xff\x0a\xfa\x7f")
	_, err = p.Bytes(jxl, "IMG_0001.JXL")
	fmt.Println(errors.Is(err, preprocess.ErrUnsupported), err)
	// Output:
	// 150528 values: [3, 224, 224]
	// true decode IMG_0001.JXL: unsupported image format: JPEG XL
}
