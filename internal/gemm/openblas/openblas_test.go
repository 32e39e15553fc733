package openblas

import (
	"errors"
	"os"
	"testing"
)

func TestSgemm(t *testing.T) {
	l, err := Load()
	if errors.Is(err, ErrNotFound) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI installs libopenblas0-pthread (.ci/run), yet: %v", err)
		}
		t.Skipf("no system BLAS (install libopenblas0-pthread to run this test): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	l.SetThreads(1)
	// [2,3]·[3,2] row-major, alpha 2, beta 1 onto c = 1.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 0, 1, 1, 1}
	c := []float32{1, 1, 1, 1}
	l.Sgemm(RowMajor, NoTrans, NoTrans, 2, 2, 3, 2, &a[0], 3, &b[0], 2, 1, &c[0], 2)
	want := []float32{1 + 2*4, 1 + 2*5, 1 + 2*10, 1 + 2*11}
	for i := range c {
		if c[i] != want[i] {
			t.Fatalf("%s: c = %v, want %v", l.Path(), c, want)
		}
	}
}
