package clipnpu

// Inspect: what a model folder holds, read from its manifest or its
// safetensors header without loading a tower (`clipidx info`).

import (
	"errors"
	"os"
	"sort"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/bundle"
)

// The kinds of folder Inspect reports.
const (
	FolderBundle      = "bundle"      // a taconite NPU bundle
	FolderHuggingFace = "huggingface" // a Hugging Face CLIP folder
	FolderMissing     = "missing"     // nothing at the path
	FolderUnknown     = "unknown"     // not a folder, or not readable
)

// FolderInfo is what Inspect found in a model folder. Its JSON form is
// the "model" object of `clipidx info --json`.
type FolderInfo struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // FolderBundle, FolderHuggingFace, FolderMissing or FolderUnknown
	// Error says what is wrong with the folder, "" when nothing is: the
	// fields it could read are still set.
	Error string `json:"error,omitempty"`

	// Bundles: the hardware contexts the bundle needs (one per xclbin it
	// names, in Xclbins, sorted), and the images and prompts of a pass
	// (the v_batch and t_batch params).
	Contexts   int      `json:"contexts,omitempty"`
	Xclbins    []string `json:"xclbins,omitempty"`
	ImageBatch int      `json:"image_batch,omitempty"`
	TextBatch  int      `json:"text_batch,omitempty"`

	// Weights summarises model.safetensors (Hugging Face folders).
	Weights *FolderWeights `json:"weights,omitempty"`
}

// FolderWeights is what a Hugging Face folder's model.safetensors holds.
type FolderWeights struct {
	Dtype    string `json:"dtype"`     // the dtype of most of the data
	Bytes    int64  `json:"bytes"`     // file size
	F16Bytes int64  `json:"f16_bytes"` // in memory with weights rounded to f16
}

// Inspect reports what kind of model folder dir is and what it holds,
// reading only the bundle's manifest or the safetensors header. A problem
// is reported in FolderInfo.Error, never returned.
func Inspect(dir string) FolderInfo {
	fi := FolderInfo{Path: dir}
	switch st, err := os.Stat(dir); {
	case errors.Is(err, os.ErrNotExist):
		fi.Kind, fi.Error = FolderMissing, "no folder at "+dir
	case err != nil:
		fi.Kind, fi.Error = FolderUnknown, err.Error()
	case !st.IsDir():
		fi.Kind, fi.Error = FolderUnknown, dir+" is not a folder"
	case IsBundle(dir):
		fi.Kind = FolderBundle
		inspectBundle(&fi)
	default:
		fi.Kind = FolderHuggingFace
		ws, err := InspectWeights(dir)
		if err != nil {
			fi.Error = err.Error()
			break
		}
		fi.Weights = &FolderWeights{Dtype: ws.Mostly(), Bytes: ws.Bytes, F16Bytes: ws.F16Bytes}
	}
	return fi
}

// inspectBundle reads the xclbins and batch params of the bundle fi.Path.
func inspectBundle(fi *FolderInfo) {
	b, err := bundle.Open(fi.Path)
	if err != nil {
		fi.Error = err.Error()
		return
	}
	defer b.Close()
	set := map[string]bool{}
	for _, gm := range b.GEMMs() {
		if x, ok := b.Xclbin(gm.Ctx); ok {
			set[x.File] = true
		}
	}
	for _, o := range b.Ops() {
		set[o.Xclbin] = true
	}
	for f := range set {
		fi.Xclbins = append(fi.Xclbins, f)
	}
	sort.Strings(fi.Xclbins)
	fi.Contexts = len(fi.Xclbins)
	var errs []string
	for _, p := range []struct {
		name string
		dst  *int
	}{{"v_batch", &fi.ImageBatch}, {"t_batch", &fi.TextBatch}} {
		v, err := b.ParamInt(p.name)
		if err != nil {
			errs = append(errs, err.Error())
		}
		*p.dst = v
	}
	if len(errs) > 0 {
		fi.Error = strings.Join(errs, "; ")
	}
}
