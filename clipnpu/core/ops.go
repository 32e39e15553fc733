package core

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// ErrClosed is returned by a backend used after Close.
var ErrClosed = errors.New("clipnpu: backend is closed")

// CheckBatch enforces the Backend error contract on an input of length got
// holding n items of per values each.
func CheckBatch(got, n, per int, what string) error {
	if n < 0 {
		return fmt.Errorf("clipnpu: negative batch size %d", n)
	}
	if got != n*per {
		return fmt.Errorf("clipnpu: %d %s for %d items, want %d (%d each)", got, what, n, n*per, per)
	}
	return nil
}

// CheckIDs refuses token ids outside the vocabulary.
func CheckIDs(ids []int32, vocab int) error {
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("clipnpu: token id %d at position %d outside the vocabulary of %d", id, i, vocab)
		}
	}
	return nil
}

// Linear computes y [m, w.rows] = x [m, w.cols] · wᵀ + bias (nn.Linear);
// bias may be nil. Output columns are split across goroutines; 16-bit
// weight rows are widened once per call.
func Linear(y, x []float32, m int, w *Tensor, bias []float32, threads int) {
	in, outN := w.Cols, w.Rows
	Parallel(outN, threads, func(lo, hi int) {
		buf := make([]float32, in)
		for j := lo; j < hi; j++ {
			wj := w.RowInto(j, buf) // [in]
			var b float64
			if bias != nil {
				b = float64(bias[j])
			}
			for i := 0; i < m; i++ {
				y[i*outN+j] = float32(Dot64(x[i*in:(i+1)*in], wj) + b)
			}
		}
	})
}

// Dot64 is Σ a[i]·b[i] accumulated in float64.
func Dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, av := range a {
		s += float64(av) * float64(b[i])
	}
	return s
}

// LayerNorm normalises each of the m rows of x [m, n] into y (may alias x):
// (x − mean)/sqrt(var + eps)·w + b, biased variance as torch computes it.
func LayerNorm(y, x []float32, m, n int, w, b []float32, eps float32) {
	for r := 0; r < m; r++ {
		row := x[r*n : (r+1)*n]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(n)
		var variance float64
		for _, v := range row {
			d := float64(v) - mean
			variance += d * d
		}
		variance /= float64(n)
		inv := 1 / math.Sqrt(variance+float64(eps))
		dst := y[r*n : (r+1)*n]
		for j, v := range row {
			dst[j] = float32((float64(v)-mean)*inv*float64(w[j]) + float64(b[j]))
		}
	}
}

// Activate applies the MLP activation in place: "gelu" is the exact
// erf form, "quick_gelu" is x·sigmoid(1.702·x).
func Activate(x []float32, act string) {
	switch act {
	case "quick_gelu":
		for i, v := range x {
			f := float64(v)
			x[i] = float32(f / (1 + math.Exp(-1.702*f)))
		}
	default: // "gelu"; Config.Validate refuses anything else
		for i, v := range x {
			f := float64(v)
			x[i] = float32(0.5 * f * (1 + math.Erf(f/math.Sqrt2)))
		}
	}
}

// Parallel splits [0, n) into at most threads contiguous ranges and runs fn
// on each in its own goroutine.
func Parallel(n, threads int, fn func(lo, hi int)) {
	if threads <= 1 || n < 2 {
		fn(0, n)
		return
	}
	if threads > n {
		threads = n
	}
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		lo, hi := i*n/threads, (i+1)*n/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}
