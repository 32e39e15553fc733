package anchors

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A shell stand-in for a reference process: ready, then one answer per
// request; a process that never says ready is refused with what it said.
func TestProcess(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	p, err := Start(exec.Command("sh", "-c", `echo ready; while read l; do echo "0.25 0.5"; done`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		w, c, err := p.Time("go")
		if err != nil || w != 250*time.Millisecond || c != 500*time.Millisecond {
			t.Fatalf("Time = %v, %v, %v; want 250ms, 500ms", w, c, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(exec.Command("sh", "-c", `echo "no numpy"`)); err == nil || !strings.Contains(err.Error(), "no numpy") {
		t.Errorf("a process that is never ready: %v", err)
	}
	bad, err := Start(exec.Command("sh", "-c", `echo ready; read l; echo oops`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bad.Time("go"); err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("a malformed answer: %v", err)
	}
	bad.Close()
}
