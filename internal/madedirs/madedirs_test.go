package madedirs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMkdirAll(t *testing.T) {
	base := t.TempDir()
	made, err := MkdirAll(filepath.Join(base, "a", "b", "c"))
	want := []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), filepath.Join(base, "a", "b", "c")}
	if err != nil || !slices.Equal(made, want) {
		t.Fatalf("MkdirAll = %q, %v; want %q", made, err, want)
	}
	if made, err := MkdirAll(filepath.Join(base, "a", "b", "d")); err != nil || !slices.Equal(made, []string{filepath.Join(base, "a", "b", "d")}) {
		t.Errorf("beside folders that exist: %q, %v", made, err)
	}
	f := filepath.Join(base, "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := MkdirAll(filepath.Join(f, "x")); err == nil {
		t.Error("under a file: no error")
	}
}
