package preprocess

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ConfigFile is the name of the Hugging Face image-processor configuration
// inside a model folder.
const ConfigFile = "preprocessor_config.json"

// ResampleBicubic is the PIL/HF resample code for bicubic interpolation, the
// only filter this package implements (every CLIP checkpoint uses it).
const ResampleBicubic = 3

// Config is what an image becomes: the resize target, the crop and the
// normalisation, as a preprocessor_config.json describes them. The Skip
// fields invert Hugging Face's do_* switches so that their zero value means
// "on", as it does in CLIPImageProcessor.
type Config struct {
	// ShortestEdge is the length the shorter side is resized to, keeping the
	// aspect ratio (HF size.shortest_edge). When it is 0, ResizeHeight and
	// ResizeWidth give an exact output size instead (HF size.height/width).
	ShortestEdge              int
	ResizeHeight, ResizeWidth int
	// CropHeight and CropWidth are the size of the center crop, and so of
	// the output tensor [3, CropHeight, CropWidth].
	CropHeight, CropWidth int
	// Mean and Std are per channel (R, G, B) in units of 1/255 levels scaled
	// by RescaleFactor, as HF stores them.
	Mean, Std [3]float32
	// Resample is the PIL resample code; only ResampleBicubic is supported.
	Resample int
	// RescaleFactor multiplies the 8-bit values before normalisation; 0
	// means 1/255.
	RescaleFactor float64

	SkipResize, SkipCenterCrop, SkipRescale, SkipNormalize bool
}

// DefaultConfig returns the configuration of
// laion/CLIP-ViT-H-14-laion2B-s32B-b79K (OpenAI CLIP mean and std, shortest
// edge 224, center crop 224x224, bicubic).
func DefaultConfig() Config {
	return Config{
		ShortestEdge:  224,
		CropHeight:    224,
		CropWidth:     224,
		Mean:          [3]float32{0.48145466, 0.4578275, 0.40821073},
		Std:           [3]float32{0.26862954, 0.26130258, 0.27577711},
		Resample:      ResampleBicubic,
		RescaleFactor: 1.0 / 255,
	}
}

// rawConfig mirrors the fields of preprocessor_config.json this package
// reads. Pointers tell an absent key from a false or zero one.
type rawConfig struct {
	Size          json.RawMessage `json:"size"`
	CropSize      json.RawMessage `json:"crop_size"`
	ImageMean     []float64       `json:"image_mean"`
	ImageStd      []float64       `json:"image_std"`
	Resample      *int            `json:"resample"`
	RescaleFactor *float64        `json:"rescale_factor"`
	DoResize      *bool           `json:"do_resize"`
	DoCenterCrop  *bool           `json:"do_center_crop"`
	DoRescale     *bool           `json:"do_rescale"`
	DoNormalize   *bool           `json:"do_normalize"`
}

// LoadConfig reads dir/preprocessor_config.json. Keys the file leaves out
// take CLIPImageProcessor's defaults (those of DefaultConfig). When the file
// does not exist the error wraps fs.ErrNotExist, so a caller can choose to
// fall back to DefaultConfig.
func LoadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err // *PathError names the file
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses the contents of a preprocessor_config.json.
func ParseConfig(data []byte) (Config, error) {
	var raw rawConfig
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, fmt.Errorf("parse image processor config: %w", err)
	}
	cfg := DefaultConfig()
	if len(raw.Size) > 0 && string(raw.Size) != "null" {
		se, h, w, err := parseSize(raw.Size, true)
		if err != nil {
			return Config{}, fmt.Errorf("size: %w", err)
		}
		cfg.ShortestEdge, cfg.ResizeHeight, cfg.ResizeWidth = se, h, w
	}
	if len(raw.CropSize) > 0 && string(raw.CropSize) != "null" {
		se, h, w, err := parseSize(raw.CropSize, false)
		if err != nil || se != 0 {
			return Config{}, fmt.Errorf("crop_size: want {height, width} or an integer: %s", raw.CropSize)
		}
		cfg.CropHeight, cfg.CropWidth = h, w
	}
	var err error
	if raw.ImageMean != nil {
		if cfg.Mean, err = three(raw.ImageMean); err != nil {
			return Config{}, fmt.Errorf("image_mean: %w", err)
		}
	}
	if raw.ImageStd != nil {
		if cfg.Std, err = three(raw.ImageStd); err != nil {
			return Config{}, fmt.Errorf("image_std: %w", err)
		}
	}
	if raw.Resample != nil {
		cfg.Resample = *raw.Resample
	}
	if raw.RescaleFactor != nil {
		cfg.RescaleFactor = *raw.RescaleFactor
	}
	cfg.SkipResize = raw.DoResize != nil && !*raw.DoResize
	cfg.SkipCenterCrop = raw.DoCenterCrop != nil && !*raw.DoCenterCrop
	cfg.SkipRescale = raw.DoRescale != nil && !*raw.DoRescale
	cfg.SkipNormalize = raw.DoNormalize != nil && !*raw.DoNormalize
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parseSize reads an HF size value: an integer (shortest edge for size,
// square for crop_size), {"shortest_edge": n} or {"height": h, "width": w}.
func parseSize(msg json.RawMessage, intIsShortest bool) (shortest, h, w int, err error) {
	var n int
	if json.Unmarshal(msg, &n) == nil {
		if intIsShortest {
			return n, 0, 0, nil
		}
		return 0, n, n, nil
	}
	var m map[string]int
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, 0, 0, fmt.Errorf("want an integer or an object of integers: %s", msg)
	}
	if se, ok := m["shortest_edge"]; ok {
		if len(m) != 1 {
			return 0, 0, 0, fmt.Errorf("shortest_edge with other keys is not supported: %s", msg)
		}
		return se, 0, 0, nil
	}
	h, okh := m["height"]
	w, okw := m["width"]
	if !okh || !okw || len(m) != 2 {
		return 0, 0, 0, fmt.Errorf("want {shortest_edge} or {height, width}: %s", msg)
	}
	return 0, h, w, nil
}

func three(v []float64) ([3]float32, error) {
	if len(v) != 3 {
		return [3]float32{}, fmt.Errorf("want 3 values (R, G, B), got %d", len(v))
	}
	return [3]float32{float32(v[0]), float32(v[1]), float32(v[2])}, nil
}

// Validate reports whether the configuration can be run.
func (c Config) Validate() error {
	const maxSide = 1 << 14
	switch {
	case c.Resample != ResampleBicubic:
		return fmt.Errorf("resample %d is not supported (only %d, bicubic)", c.Resample, ResampleBicubic)
	case !c.SkipResize && c.ShortestEdge == 0 && (c.ResizeHeight <= 0 || c.ResizeWidth <= 0):
		return errors.New("no resize size: set shortest_edge or height and width")
	case c.ShortestEdge < 0 || c.ShortestEdge > maxSide || c.ResizeHeight > maxSide || c.ResizeWidth > maxSide:
		return fmt.Errorf("resize size out of range")
	case !c.SkipCenterCrop && (c.CropHeight <= 0 || c.CropWidth <= 0 || c.CropHeight > maxSide || c.CropWidth > maxSide):
		return fmt.Errorf("crop size %dx%d out of range", c.CropWidth, c.CropHeight)
	case c.RescaleFactor < 0:
		return fmt.Errorf("rescale_factor %v is negative", c.RescaleFactor)
	}
	if !c.SkipNormalize {
		for i, s := range c.Std {
			if s == 0 {
				return fmt.Errorf("image_std[%d] is zero", i)
			}
		}
	}
	return nil
}
