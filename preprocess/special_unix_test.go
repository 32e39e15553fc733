//go:build unix

package preprocess

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFileNotRegular: File refuses a named pipe and a device by name
// instead of waiting for the pipe's writer or reading /dev/zero without
// end (search --image, classify and embed read images through it).
func TestFileNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "x.jpg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	p := New(DefaultConfig(), Options{})
	for _, path := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := p.File(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("File(%s): %v, want an error naming it as not a regular file", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("File(%s) still reads after 10 s", path)
		}
	}
}
