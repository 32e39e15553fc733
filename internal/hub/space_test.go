package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/hub/hubtest"
)

func TestNoSpace(t *testing.T) {
	s := hubtest.New(t, "a/b", map[string]hubtest.File{"model.safetensors": {Data: hubtest.Random(5000, 1), LFS: true}})
	defer func(f func(string) (int64, bool)) { freeSpace = f }(freeSpace)
	freeSpace = func(string) (int64, bool) { return 4999, true }
	dir := t.TempDir()
	_, err := DownloadFile(context.Background(), "a/b", "model.safetensors", dir, Options{Endpoint: s.Endpoint()})
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target exists (stat: %v)", err)
	}
	freeSpace = func(string) (int64, bool) { return 5000, true }
	if _, err := DownloadFile(context.Background(), "a/b", "model.safetensors", dir, Options{Endpoint: s.Endpoint()}); err != nil {
		t.Fatal(err)
	}
}
