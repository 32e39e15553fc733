package clipnpu

import (
	"path/filepath"

	"github.com/clipidx/clipidx/internal/userdir"
)

// DefaultRepo is the checkpoint clipidx uses unless told otherwise.
const DefaultRepo = "laion/CLIP-ViT-H-14-laion2B-s32B-b79K"

// ModelsDir is the folder models are downloaded into: clipidx/models in
// the user's cache folder (./clipidx-models where the system names none).
// A downloaded repository lives in ModelsDir()/OWNER/NAME.
func ModelsDir() string {
	dir, err := userdir.Cache()
	if err != nil {
		return filepath.Join(".", "clipidx-models")
	}
	return filepath.Join(dir, "clipidx", "models")
}

// DefaultDir is the folder of the default checkpoint (DefaultRepo).
func DefaultDir() string { return filepath.Join(ModelsDir(), filepath.FromSlash(DefaultRepo)) }
