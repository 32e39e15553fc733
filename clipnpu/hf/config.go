package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// hfConfig mirrors the parts of config.json we read. Pointers tell a missing
// key (take HF's default) from a zero.
type hfConfig struct {
	NameOrPath    *string      `json:"_name_or_path"`
	ProjectionDim *int         `json:"projection_dim"`
	TextConfig    *hfTowerJSON `json:"text_config"`
	VisionConfig  *hfTowerJSON `json:"vision_config"`
	TextDict      *hfTowerJSON `json:"text_config_dict"` // very old configs
	VisionDict    *hfTowerJSON `json:"vision_config_dict"`
}

type hfTowerJSON struct {
	Hidden       *int     `json:"hidden_size"`
	MLP          *int     `json:"intermediate_size"`
	Layers       *int     `json:"num_hidden_layers"`
	Heads        *int     `json:"num_attention_heads"`
	Patch        *int     `json:"patch_size"`
	ImageSize    *int     `json:"image_size"`
	Channels     *int     `json:"num_channels"`
	Act          *string  `json:"hidden_act"`
	LayerNormEps *float64 `json:"layer_norm_eps"`
	Vocab        *int     `json:"vocab_size"`
	Context      *int     `json:"max_position_embeddings"`
	EOS          *int64   `json:"eos_token_id"`
}

func pick[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// LoadConfig reads dir/config.json. Missing keys take the defaults of HF's
// CLIPConfig (which are ViT-B/32's text and vision shapes with quick_gelu).
// A folder without config.json gives ErrNoModel when it is empty or absent,
// ErrBadModel otherwise.
func LoadConfig(dir string) (core.Config, error) {
	if err := CheckFolder(dir); err != nil {
		return core.Config{}, err
	}
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return core.Config{}, errMissing(path)
	}
	if err != nil {
		return core.Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return core.Config{}, fmt.Errorf("%w: %s: %v", core.ErrBadModel, path, err)
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(filepath.Clean(dir))
	}
	return cfg, nil
}

// parseConfig decodes a CLIPConfig JSON document and validates it.
func parseConfig(data []byte) (core.Config, error) {
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return core.Config{}, err
	}
	t, v := h.TextConfig, h.VisionConfig
	if t == nil {
		t = h.TextDict
	}
	if v == nil {
		v = h.VisionDict
	}
	if t == nil {
		t = &hfTowerJSON{}
	}
	if v == nil {
		v = &hfTowerJSON{}
	}
	b32 := core.ViTB32Config() // HF's CLIPConfig defaults are ViT-B/32's shape
	cfg := core.Config{
		Name: pick(h.NameOrPath, ""),
		Vision: core.VisionConfig{
			Hidden:       pick(v.Hidden, b32.Vision.Hidden),
			Heads:        pick(v.Heads, b32.Vision.Heads),
			Layers:       pick(v.Layers, b32.Vision.Layers),
			MLP:          pick(v.MLP, b32.Vision.MLP),
			Patch:        pick(v.Patch, b32.Vision.Patch),
			ImageSize:    pick(v.ImageSize, b32.Vision.ImageSize),
			Act:          pick(v.Act, "quick_gelu"),
			LayerNormEps: float32(pick(v.LayerNormEps, 1e-5)),
		},
		Text: core.TextConfig{
			Hidden:       pick(t.Hidden, b32.Text.Hidden),
			Heads:        pick(t.Heads, b32.Text.Heads),
			Layers:       pick(t.Layers, b32.Text.Layers),
			MLP:          pick(t.MLP, b32.Text.MLP),
			Vocab:        pick(t.Vocab, b32.Text.Vocab),
			Context:      pick(t.Context, b32.Text.Context),
			Act:          pick(t.Act, "quick_gelu"),
			LayerNormEps: float32(pick(t.LayerNormEps, 1e-5)),
			EOS:          int32(pick(t.EOS, 49407)),
		},
		ProjectionDim: pick(h.ProjectionDim, 512),
	}
	if ch := pick(v.Channels, 3); ch != 3 {
		return core.Config{}, fmt.Errorf("vision_config.num_channels %d: only 3 channels are supported", ch)
	}
	return cfg, cfg.Validate()
}
