package tokenizer_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/tokenizer"
)

// Encode a prompt with the vocabulary of a model folder. (This example has no
// Output section because the vocabulary is not part of the repository; the
// tests check the same ids against the shared fixtures.)
func Example() {
	dir := filepath.Join(os.Getenv("HOME"), ".cache", "clipidx", "models", "laion", "CLIP-ViT-H-14-laion2B-s32B-b79K")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("a photo of a cat")
	fmt.Println(ids[:tok.Length(ids)]) // [49406 320 1125 539 320 2368 49407]
	fmt.Println(tok.Decode(ids))       // a photo of a cat
}
