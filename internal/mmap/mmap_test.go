package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestMapAndRead(t *testing.T) {
	want := bytes.Repeat([]byte("clipidx "), 3000) // several pages
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, fn := range map[string]func(*os.File, int64) ([]byte, func() error, error){"Map": Map, "Read": Read} {
		data, release, err := fn(f, int64(len(want)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "Map" {
			Drop(data[100:]) // pages are dropped, not lost: reads fault them back
		}
		if !bytes.Equal(data, want) {
			t.Errorf("%s: data differs from the file", name)
		}
		if err := release(); err != nil {
			t.Errorf("%s: release: %v", name, err)
		}
	}
	if data, release, err := Map(f, 0); err != nil || len(data) != 0 || release() != nil {
		t.Errorf("Map of 0 bytes: %d bytes, %v", len(data), err)
	}
}
