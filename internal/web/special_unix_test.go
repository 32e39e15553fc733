//go:build unix

package web

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestServeFileNowAPipe: an indexed file replaced by a named pipe is a
// 404 (changed), not a request that waits for the pipe's writer.
func TestServeFileNowAPipe(t *testing.T) {
	e := newEnv(t, nil)
	p := filepath.Join(e.dir, "wide_300x200.png")
	id := e.idOf(t, p)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"/image/" + id, "/thumb/" + id} {
		done := make(chan int, 1)
		go func() { code, _, _ := e.get(t, u); done <- code }()
		select {
		case code := <-done:
			if code != 404 {
				t.Errorf("GET %s: %d, want 404", u, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("GET %s waits on the pipe", u)
		}
	}
}
