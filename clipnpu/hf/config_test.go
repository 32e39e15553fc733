package hf

import (
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name  string
		json  string
		check func(core.Config) bool
		err   string
	}{
		{"empty takes HF CLIPConfig defaults", `{}`, func(c core.Config) bool {
			b := core.ViTB32Config()
			b.Name = ""
			return c == b
		}, ""},
		{"partial tower keeps defaults for the rest", `{"projection_dim": 64, "text_config": {"hidden_size": 128, "num_attention_heads": 4}, "vision_config": {"patch_size": 16, "hidden_act": "gelu"}}`,
			func(c core.Config) bool {
				return c.ProjectionDim == 64 && c.Text.Hidden == 128 && c.Text.Heads == 4 && c.Text.Layers == 12 &&
					c.Vision.Patch == 16 && c.Vision.Act == "gelu" && c.Text.Act == "quick_gelu" && c.Text.EOS == 49407
			}, ""},
		{"name, eps and legacy eos", `{"_name_or_path": "openai/x", "text_config": {"eos_token_id": 2, "layer_norm_eps": 1e-6}}`,
			func(c core.Config) bool {
				return c.Name == "openai/x" && c.Text.EOS == 2 && c.Text.LayerNormEps == 1e-6
			}, ""},
		{"very old *_config_dict keys", `{"text_config_dict": {"hidden_size": 256, "num_attention_heads": 4}}`,
			func(c core.Config) bool { return c.Text.Hidden == 256 }, ""},
		{"heads do not divide", `{"vision_config": {"hidden_size": 100, "num_attention_heads": 3}}`, nil, "not divisible"},
		{"patch does not divide", `{"vision_config": {"image_size": 225}}`, nil, "multiple of patch_size"},
		{"unknown activation", `{"text_config": {"hidden_act": "relu"}}`, nil, "relu"},
		{"zero layers", `{"text_config": {"num_hidden_layers": 0}}`, nil, "out of range"},
		{"four channels", `{"vision_config": {"num_channels": 4}}`, nil, "channels"},
		{"not an object", `[1]`, nil, "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig([]byte(c.json))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(cfg) {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

func TestNamedConfigs(t *testing.T) {
	for _, c := range []struct {
		cfg       core.Config
		tokens, d int
	}{{core.ViTH14Config(), 257, 1024}, {core.ViTB32Config(), 50, 512}} {
		if err := c.cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.cfg.Name, err)
		}
		if c.cfg.Vision.Tokens() != c.tokens || c.cfg.ProjectionDim != c.d {
			t.Errorf("%s: %d tokens, D %d", c.cfg.Name, c.cfg.Vision.Tokens(), c.cfg.ProjectionDim)
		}
	}
}
