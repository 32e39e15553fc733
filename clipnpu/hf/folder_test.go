package hf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// TestMissingAfterCutDownload: a model folder whose download was cut
// short (model.safetensors.part beside the files that finished) said only
// "model.safetensors is missing"; it now says to run model pull again.
func TestMissingAfterCutDownload(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json.part"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(dir)
	if !errors.Is(err, core.ErrBadModel) || !strings.Contains(err.Error(), "config.json is missing: its download was cut short") || !strings.Contains(err.Error(), "clipidx model pull") {
		t.Errorf("LoadConfig: %v, want the cut download named", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InspectWeights(dir); err == nil || strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), "model.safetensors is missing") {
		t.Errorf("InspectWeights with no .part: %v, want only missing", err)
	}
}
