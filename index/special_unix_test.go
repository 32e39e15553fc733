//go:build unix

package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestBuildRootNotRegular: a root named as an image or a shard that is a
// named pipe, or a link to a device, is named and not read: the build
// neither waits for the pipe's writer nor reads /dev/zero without end.
// The same for a file that became a pipe after the walk (readRegular).
func TestBuildRootNotRegular(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	fifo, shard, zero := filepath.Join(d, "x.jpg"), filepath.Join(d, "data.tar"), filepath.Join(d, "z.jpg")
	for _, p := range []string{fifo, shard} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "/dev/zero", zero)
	photos(t, d, "p", 1)
	roots := []string{fifo, shard, zero, filepath.Join(d, "p0.png")}
	var reported []error
	o := opts(&fakeEnc{})
	o.OnError = func(p string, err error) { reported = append(reported, fmt.Errorf("%s: %w", p, err)) }
	done := make(chan error, 1)
	go func() {
		sum, err := Build(context.Background(), db, roots, o)
		if err == nil && sum.Added != 1 {
			err = fmt.Errorf("%s, want the photo added", sumOf(sum))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the build still runs after 30 s: it waits on the pipe or reads the device")
	}
	if len(reported) != 3 {
		t.Fatalf("reported %v, want the pipe, the shard pipe and the device named", reported)
	}
	for _, err := range reported {
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("reported %v, want %v", err, ErrNotRegular)
		}
	}

	// A pipe where the walk found a file: not opened.
	if err := os.Remove(zero); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(zero, 0o644); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := readRegular(zero, 1<<20); read <- err }()
	select {
	case err := <-read:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("readRegular of a pipe: %v, want %v", err, ErrNotRegular)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readRegular waits on a pipe")
	}
	// A file longer than the limit: refused, not read whole.
	if _, err := readRegular("/dev/zero", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("readRegular of /dev/zero: %v, want %v", err, ErrNotRegular)
	}
	big := filepath.Join(d, "big.jpg")
	write(t, big, string(make([]byte, 3<<10)))
	if _, err := readRegular(big, 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("readRegular of 3 KiB with a limit of 1 KiB: %v, want %v", err, ErrTooLarge)
	}
}
