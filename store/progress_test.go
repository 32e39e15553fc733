//go:build unix

package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The holder named in the lock file: who holds it while a writer is
// open, nobody after; a holder whose process died (a build killed
// without a chance to clear it) is no running build; an index without a
// progress record (written before it existed) tells no build.
func TestBuildHolderAndState(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	w, err := OpenWriter(db, testID, WriterOptions{Command: "clipidx watch /p"})
	if err != nil {
		t.Fatal(err)
	}
	h, ok := BuildHolder(db)
	if !ok || h.PID != os.Getpid() || h.Command != "clipidx watch /p" {
		t.Errorf("holder while a writer is open: %+v %v", h, ok)
	}
	if _, err := OpenWriter(db, testID, WriterOptions{}); err == nil || !strings.Contains(err.Error(), "held by pid") {
		t.Errorf("second writer: %v, want the holder named", err)
	}
	st := StateOf(db, nil)
	if !st.Running || st.Progress != nil {
		t.Errorf("state before any progress: %+v, want running, scanning", st)
	}
	w.Close()
	if h, ok := BuildHolder(db); ok {
		t.Errorf("holder after Close: %+v", h)
	}
	r, err := OpenReader(db, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var p *Progress
	r.View(func(s *Snapshot) error { p, err = s.Progress(); return err })
	r.Close()
	if p != nil || err != nil || StateOf(db, p).Running {
		t.Errorf("an index without a progress record: %+v %v", p, err)
	}

	// A dead process named in the lock file.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := newHolder("clipidx build")
	dead.PID = cmd.Process.Pid
	f, err := os.OpenFile(db+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	writeHolder(f, dead)
	f.Close()
	if h, ok := BuildHolder(db); ok {
		t.Errorf("a dead holder counts as running: %+v", h)
	}
	if StateOf(db, &Progress{Phase: "index", Holder: dead}).Running {
		t.Error("the progress of a dead build counts as running")
	}
}
