package core

import (
	"fmt"
)

// Config is the shape of a CLIP model: what config.json (Hugging Face
// CLIPConfig) says, with HF's defaults for missing keys.
type Config struct {
	// Name is the model identity: config.json's "_name_or_path" when present,
	// else the folder's base name ("" for random models until set).
	Name          string
	Vision        VisionConfig
	Text          TextConfig
	ProjectionDim int // D, the joint embedding width
}

// Arch names what of the configuration changes the vectors without
// changing the weights' shapes (a weights hash covers those): each
// tower's activation, layer-norm epsilon and head count, and the text
// tower's EOS id (where it pools). A config.json edited by a conversion
// mistake (quick_gelu for gelu) is another model to an index.
func (c Config) Arch() string {
	v, t := c.Vision, c.Text
	return fmt.Sprintf("image %s eps %g heads %d; text %s eps %g heads %d eos %d",
		v.Act, v.LayerNormEps, v.Heads, t.Act, t.LayerNormEps, t.Heads, t.EOS)
}

// VisionConfig is the image tower (HF CLIPVisionConfig).
type VisionConfig struct {
	Hidden       int     // width (1280 for ViT-H/14)
	Heads        int     // attention heads (16)
	Layers       int     // encoder layers (32)
	MLP          int     // MLP inner width (5120)
	Patch        int     // patch edge in pixels (14)
	ImageSize    int     // S, input edge in pixels (224)
	Act          string  // "gelu" (exact erf) or "quick_gelu"
	LayerNormEps float32 // 1e-5
}

// TextConfig is the text tower (HF CLIPTextConfig).
type TextConfig struct {
	Hidden       int     // width (1024 for ViT-H/14)
	Heads        int     // attention heads (16)
	Layers       int     // encoder layers (24)
	MLP          int     // MLP inner width (4096)
	Vocab        int     // token embedding rows (49408)
	Context      int     // T, max_position_embeddings (77)
	Act          string  // "gelu" or "quick_gelu"
	LayerNormEps float32 // 1e-5
	// EOS is eos_token_id. HF pools at the first position holding EOS,
	// except for the legacy value 2 (old configs), where it pools at the
	// position of the largest id (the real EOS 49407 is the largest id).
	EOS int32
}

// Tokens is the vision sequence length: one class token plus the patches
// (257 for 224 px and patch 14).
func (v VisionConfig) Tokens() int {
	g := v.ImageSize / v.Patch
	return g*g + 1
}

// Grid is the number of patches along one edge (16 for 224 px / 14).
func (v VisionConfig) Grid() int { return v.ImageSize / v.Patch }

// ViTH14Config is laion/CLIP-ViT-H-14-laion2B-s32B-b79K's shape.
func ViTH14Config() Config {
	return Config{
		Name:          "laion/CLIP-ViT-H-14-laion2B-s32B-b79K",
		Vision:        VisionConfig{Hidden: 1280, Heads: 16, Layers: 32, MLP: 5120, Patch: 14, ImageSize: 224, Act: "gelu", LayerNormEps: 1e-5},
		Text:          TextConfig{Hidden: 1024, Heads: 16, Layers: 24, MLP: 4096, Vocab: 49408, Context: 77, Act: "gelu", LayerNormEps: 1e-5, EOS: 49407},
		ProjectionDim: 1024,
	}
}

// ViTB32Config is openai/clip-vit-base-patch32's shape.
func ViTB32Config() Config {
	return Config{
		Name:          "openai/clip-vit-base-patch32",
		Vision:        VisionConfig{Hidden: 768, Heads: 12, Layers: 12, MLP: 3072, Patch: 32, ImageSize: 224, Act: "quick_gelu", LayerNormEps: 1e-5},
		Text:          TextConfig{Hidden: 512, Heads: 8, Layers: 12, MLP: 2048, Vocab: 49408, Context: 77, Act: "quick_gelu", LayerNormEps: 1e-5, EOS: 49407},
		ProjectionDim: 512,
	}
}

// Validate reports a shape the forward cannot run.
func (c Config) Validate() error {
	pos := []struct {
		name string
		v    int
	}{
		{"vision hidden_size", c.Vision.Hidden}, {"vision num_attention_heads", c.Vision.Heads},
		{"vision num_hidden_layers", c.Vision.Layers}, {"vision intermediate_size", c.Vision.MLP},
		{"vision patch_size", c.Vision.Patch}, {"vision image_size", c.Vision.ImageSize},
		{"text hidden_size", c.Text.Hidden}, {"text num_attention_heads", c.Text.Heads},
		{"text num_hidden_layers", c.Text.Layers}, {"text intermediate_size", c.Text.MLP},
		{"text vocab_size", c.Text.Vocab}, {"text max_position_embeddings", c.Text.Context},
		{"projection_dim", c.ProjectionDim},
	}
	for _, p := range pos {
		if p.v <= 0 || p.v > 1<<20 {
			return fmt.Errorf("%s %d out of range", p.name, p.v)
		}
	}
	if c.Vision.Hidden%c.Vision.Heads != 0 {
		return fmt.Errorf("vision hidden_size %d not divisible by %d heads", c.Vision.Hidden, c.Vision.Heads)
	}
	if c.Text.Hidden%c.Text.Heads != 0 {
		return fmt.Errorf("text hidden_size %d not divisible by %d heads", c.Text.Hidden, c.Text.Heads)
	}
	if c.Vision.ImageSize%c.Vision.Patch != 0 {
		return fmt.Errorf("vision image_size %d not a multiple of patch_size %d", c.Vision.ImageSize, c.Vision.Patch)
	}
	for _, a := range []string{c.Vision.Act, c.Text.Act} {
		if a != "gelu" && a != "quick_gelu" {
			return fmt.Errorf("hidden_act %q: want gelu or quick_gelu", a)
		}
	}
	if !(c.Vision.LayerNormEps > 0) || !(c.Text.LayerNormEps > 0) {
		return fmt.Errorf("layer_norm_eps must be positive")
	}
	return nil
}

// linearFLOPs is 2·m·k·n, one multiply and one add per weight and row.
func linearFLOPs(m, k, n int) float64 { return 2 * float64(m) * float64(k) * float64(n) }

// encoderFLOPs counts L pre-LN layers on T tokens of width H and MLP width
// M: q, k, v, o (4·H²), fc1 and fc2 (2·H·M) per token, plus the attention
// products q·kᵀ and p·v (2·T²·H each). LayerNorm, softmax, GELU and the
// adds are O(T·H) and left out.
func encoderFLOPs(L, T, H, M int) float64 {
	perLayer := linearFLOPs(T, H, 4*H) + linearFLOPs(T, H, 2*M) + 2*linearFLOPs(T, H, T)
	return float64(L) * perLayer
}

// ImageFLOPs is one image through the vision tower: patch embedding, the
// encoder on G²+1 tokens and the projection of the class token.
func (c Config) ImageFLOPs() float64 {
	v := c.Vision
	if v.Patch == 0 {
		return 0 // shape unknown
	}
	G := v.Grid()
	return linearFLOPs(G*G, 3*v.Patch*v.Patch, v.Hidden) +
		encoderFLOPs(v.Layers, v.Tokens(), v.Hidden, v.MLP) +
		linearFLOPs(1, v.Hidden, c.ProjectionDim)
}

// TextFLOPs is one prompt of tokens tokens through the text tower and its
// projection. HF (and PyTorch) always run the full context; the fast CPU
// path runs the tokens up to EOS only, which this count assumes.
func (c Config) TextFLOPs(tokens int) float64 {
	t := c.Text
	return encoderFLOPs(t.Layers, tokens, t.Hidden, t.MLP) + linearFLOPs(1, t.Hidden, c.ProjectionDim)
}
