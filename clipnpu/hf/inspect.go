package hf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// WeightsSummary describes a Hugging Face folder's model.safetensors from
// its header alone (no tensor data is read).
type WeightsSummary struct {
	File  string           // path of model.safetensors
	Bytes int64            // file size
	Dtype map[string]int64 // bytes of tensor data by dtype ("F32", "F16", ...)
	// F16Bytes is what the tensor data takes with every F32 matrix rounded
	// to binary16 (Options.Weights "f16"); vectors stay F32, but are small.
	F16Bytes int64
}

// Mostly returns the dtype holding most of the data ("F32", "F16", ...).
func (w WeightsSummary) Mostly() string {
	best, n := "", int64(-1)
	for d, b := range w.Dtype {
		if b > n || (b == n && d < best) {
			best, n = d, b
		}
	}
	return best
}

// InspectWeights reads the header of dir's model.safetensors. Errors wrap
// ErrBadModel for a missing or malformed file and name it.
func InspectWeights(dir string) (WeightsSummary, error) {
	path := filepath.Join(dir, "model.safetensors")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return WeightsSummary{}, errMissing(path)
	}
	if err != nil {
		return WeightsSummary{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return WeightsSummary{}, err
	}
	var prefix [8]byte
	if _, err := io.ReadFull(f, prefix[:]); err != nil {
		return WeightsSummary{}, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	n, err := headerLen(prefix[:], st.Size())
	if err != nil {
		return WeightsSummary{}, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	buf := make([]byte, 8+n)
	copy(buf, prefix[:])
	if _, err := io.ReadFull(f, buf[8:]); err != nil {
		return WeightsSummary{}, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	h, err := parseSafetensors(buf, st.Size())
	if err != nil {
		return WeightsSummary{}, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	w := WeightsSummary{File: path, Bytes: st.Size(), Dtype: map[string]int64{}}
	for _, e := range h.Tensors {
		w.Dtype[e.Dtype] += e.Length
		if e.Dtype == "F32" && len(e.Shape) >= 2 && !strings.HasSuffix(e.Name, "position_embedding.weight") {
			// The weight matrices stLoader.mat rounds; position
			// embeddings, though 2-D, are read as vectors and kept F32.
			w.F16Bytes += e.Length / 2
		} else {
			w.F16Bytes += e.Length
		}
	}
	return w, nil
}
