package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestPreprocessOutputCheckedFirst: an -o that cannot be created is named
// before any image is decoded, as embed does; it was found out only when
// the tensors were written, so a missing image was reported instead and a
// long run was lost at its end.
func TestPreprocessOutputCheckedFirst(t *testing.T) {
	model := fixtures.TinyModel(t)
	dir := t.TempDir()
	absent := filepath.Join(dir, "nothing.png")
	for _, tc := range []struct {
		name, out, why string
	}{
		{"missing folder", filepath.Join(dir, "missing", "px.f32"), "no such file or directory"},
		{"a folder", dir, "it is a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, errOut, code := runCLI(t, "--model", model, "preprocess", "-o", tc.out, absent)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q: want exit 1 and nothing written", code, stdout)
			}
			if !strings.Contains(errOut, "preprocess: create "+tc.out+": "+tc.why) || strings.Contains(errOut, absent) {
				t.Errorf("stderr %q: want the output %s named (%s), not the image", errOut, tc.out, tc.why)
			}
		})
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("files left in %s: %v (%v)", dir, left, err)
	}
}
