//go:build unix

package search

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPlanImageNotRegular: an image term that is a named pipe is refused
// by name, not waited on.
func TestPlanImageNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "q.jpg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := NewPlan([]Term{{Weight: 1, Image: fifo}}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("NewPlan of a pipe: %v, want an error naming it as not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NewPlan waits on a pipe")
	}
}
