package search_test

import (
	"fmt"

	"github.com/clipidx/clipidx/search"
)

func ExampleParseQuery() {
	terms, err := search.ParseQuery([]string{"a beach", "-people", "+0.5:sunset", "@/photos/ref.jpg"})
	if err != nil {
		panic(err)
	}
	for _, t := range terms {
		fmt.Printf("%+.1f text=%q image=%q\n", t.Weight, t.Text, t.Image)
	}
	// Output:
	// +1.0 text="a beach" image=""
	// -1.0 text="people" image=""
	// +0.5 text="sunset" image=""
	// +1.0 text="" image="/photos/ref.jpg"
}
