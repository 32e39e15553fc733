package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/clipidx/clipidx/internal/flock"
)

// benchFile is the first file named name in a folder under dir, "" while
// there is none.
func benchFile(dir, name string) string {
	m, _ := filepath.Glob(filepath.Join(dir, "*", name))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// TestBenchInterruptedRemovesItsIndex: Ctrl-C or SIGTERM during bench
// search or bench export exits 130 or 143, says so, and removes the
// temporary index (and export); they were left under --dir.
func TestBenchInterruptedRemovesItsIndex(t *testing.T) {
	bin := e2eBinary(t)
	for _, c := range []struct {
		name string
		args []string
		file string // in the temporary folder once it is being filled
		sig  syscall.Signal
		code int
	}{
		// More queries than the run could time before it is signalled.
		{"search SIGINT", []string{"bench", "search", "--vectors", "20000", "--dim", "16", "--queries", "1000000000"}, "bench.db", syscall.SIGINT, 130},
		{"search SIGTERM", []string{"bench", "search", "--vectors", "20000", "--dim", "16", "--queries", "1000000000"}, "bench.db", syscall.SIGTERM, 143},
		// Signalled as the fill starts: seconds of filling and exporting
		// are left.
		{"export SIGTERM", []string{"bench", "export", "--vectors", "30000", "--dim", "16"}, "synthetic.db", syscall.SIGTERM, 143},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, append(c.args, "--dir", dir)...)
			stderr, code := signalWhen(t, cmd, c.sig, func() bool { return benchFile(dir, c.file) != "" })
			if code != c.code || !strings.Contains(stderr, "interrupted") {
				t.Errorf("stopped by %v: exit %d, stderr %q; want %d and interrupted", c.sig, code, stderr, c.code)
			}
			if left := folderTree(t, dir); len(left) > 0 {
				t.Errorf("left under --dir: %q", left)
			}
		})
	}
}

// TestBenchRemovesKilledRunsLeftovers: a bench search killed outright
// (SIGKILL: nothing of it runs) leaves its temporary index; the next bench
// search under the same folder removes it and says so, while it keeps the
// folder of a bench still running (its lock held) and folders it did not
// mark as a run's (an older clipidx's, or one being made).
func TestBenchRemovesKilledRunsLeftovers(t *testing.T) {
	if !flock.Supported {
		t.Skip("no flock here: a killed run's folder is not told from a running one's")
	}
	bin := e2eBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "bench", "search", "--vectors", "20000", "--dim", "16", "--queries", "1000000000", "--dir", dir)
	signalWhen(t, cmd, os.Kill, func() bool { return benchFile(dir, "bench.db") != "" })
	killed := filepath.Dir(benchFile(dir, "bench.db"))

	running := filepath.Join(dir, "clipidx-bench-search-1")
	unmarked := filepath.Join(dir, "clipidx-bench-search-2")
	export := filepath.Join(dir, "clipidx-bench-export-3")
	plantFiles(t, dir, "clipidx-bench-search-1/"+scratchMark, "clipidx-bench-search-1/bench.db",
		"clipidx-bench-search-2/bench.db", "clipidx-bench-export-3/"+scratchMark)
	lock, err := flock.TryLockDir(running)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()

	_, stderr, code := e2eRun(t, bin, "bench", "search", "--vectors", "100", "--dim", "8", "--queries", "2", "--dir", dir)
	if code != 0 || !strings.Contains(stderr, killed) {
		t.Errorf("bench search after a killed one: exit %d, stderr %q; want the killed run's folder %s named", code, stderr, killed)
	}
	var got []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		got = append(got, filepath.Join(dir, e.Name()))
	}
	if want := []string{export, running, unmarked}; !slices.Equal(got, want) {
		t.Errorf("left under --dir: %q, want %q", got, want)
	}
}
