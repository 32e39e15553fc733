package main

import (
	"os"
	"testing"
)

// TestMain points the user's cache folder at a temporary one, so that the
// packed weights the tests' model runs keep (model path --packed) never
// land in the real one; tests that need their own call isolate.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clipidx-test-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
