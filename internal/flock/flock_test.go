package flock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestLockBetweenProcesses: a lock another process holds is ErrHeld, for
// TryLock at once and for Lock after its timeout, and free once that
// process has gone (killed: no stale lock).
func TestLockBetweenProcesses(t *testing.T) {
	if !Supported {
		t.Skip("no flock on this system: locks do not hold between processes here")
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	if os.Getenv("FLOCK_TEST_HOLD") != "" {
		l, err := TryLock(os.Getenv("FLOCK_TEST_HOLD"))
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		l.Unlock()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLockBetweenProcesses$")
	cmd.Env = append(os.Environ(), "FLOCK_TEST_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("holder: %q %v", buf, err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrHeld) {
		t.Errorf("TryLock of a held lock: %v, want ErrHeld", err)
	}
	start := time.Now()
	if _, err := Lock(path, 200*time.Millisecond); !errors.Is(err, ErrHeld) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("Lock of a held lock: %v after %v, want ErrHeld after the timeout", err, time.Since(start))
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Lock(path, 5*time.Second)
	if err != nil {
		t.Fatalf("lock after its holder was killed: %v", err)
	}
	l.Unlock()
	l.Unlock() // a second Unlock is harmless
}

// TestHoldBusyAndDir: a file held while it is written is Busy until it is
// closed; a folder's lock is exclusive while held and free after.
func TestHoldBusyAndDir(t *testing.T) {
	if !Supported {
		t.Skip("no flock on this system: locks do not hold between processes here")
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "f.tmp")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if Busy(name) {
		t.Error("a file nobody holds is busy")
	}
	if err := Hold(f); err != nil {
		t.Fatal(err)
	}
	if !Busy(name) {
		t.Error("a held file is not busy")
	}
	f.Close()
	if Busy(name) {
		t.Error("a file closed by its holder is still busy")
	}
	if Busy(filepath.Join(dir, "absent")) {
		t.Error("a missing file is busy")
	}

	l, err := TryLockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLockDir(dir); !errors.Is(err, ErrHeld) {
		t.Errorf("second lock of a folder: %v, want ErrHeld", err)
	}
	l.Unlock()
	l2, err := TryLockDir(dir)
	if err != nil {
		t.Errorf("lock of a folder after its unlock: %v", err)
	}
	l2.Unlock()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder's lock left entries in it: %v", entries)
	}
}
