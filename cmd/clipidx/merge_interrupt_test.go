//go:build unix

package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// mergeTestID is the identity of the indexes these tests merge: merge
// needs no model.
var mergeTestID = store.Identity{Model: "fake", WeightsHash: "w", Dim: 8, Preprocess: "p1"}

// writeMergeIndex writes an index of n records under root at path.
func writeMergeIndex(t *testing.T, path, root string, n int) {
	t.Helper()
	w, err := store.OpenWriter(path, mergeTestID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	for i := range n {
		c := fmt.Sprint(root, i)
		v := make([]float32, mergeTestID.Dim)
		for j := range v {
			v[j] = float32((i*7+j*3)%11) - 5
		}
		v[i%len(v)] += 20 // no two alike
		b.Put(fmt.Sprintf("%s/%05d.jpg", root, i), store.File{Size: int64(len(c)), MtimeNs: 3, Hash: sha256.Sum256([]byte(c))}, v)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(store.LastBuild{Roots: []string{root}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// mergeCopyName matches the copy a merge into out.db makes beside it.
var mergeCopyName = regexp.MustCompile(`^out\.db\.merge-[0-9a-z]+$`)

// mergeCopies lists the copies of out.db (and their gates) in dir.
func mergeCopies(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "out.db.merge-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// runningMerge is a `clipidx merge` started in the background, stopped
// in the middle: once its copy of out.db exists, the test holds a shared
// lock on that copy (as a reader would), so the merge's next commit into
// it waits until release.
type runningMerge struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
	copy   string   // the copy's path
	lock   *os.File // the test's shared lock on it
}

func startMerge(t *testing.T, bin, dir string, args ...string) *runningMerge {
	t.Helper()
	m := &runningMerge{stderr: &lockedBuffer{}, exited: make(chan struct{})}
	before := mergeCopies(t, dir) // left by an earlier merge: not this one's
	m.cmd = exec.Command(bin, append([]string{"merge"}, args...)...)
	m.cmd.Env = append(os.Environ(), "CLIPIDX_MODEL=", "CLIPIDX_DB=", "CLIPIDX_DEVICE=", "CLIPIDX_WEIGHTS=")
	m.cmd.Stdout, m.cmd.Stderr = &bytes.Buffer{}, m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() {
		m.cmd.Process.Kill()
		<-m.exited
		m.release()
	})
	deadline := time.Now().Add(20 * time.Second)
	for m.copy == "" {
		for _, n := range mergeCopies(t, dir) {
			if mergeCopyName.MatchString(n) && !slices.Contains(before, n) {
				m.copy = filepath.Join(dir, n)
			}
		}
		select {
		case <-m.exited:
			t.Fatalf("the merge ended before its copy was seen: %v\n%s", m.cmd.ProcessState, m.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no copy of out.db appeared in 20s:\n%s", m.stderr)
		}
		time.Sleep(time.Millisecond)
	}
	f, err := os.Open(m.copy)
	if err != nil {
		t.Fatalf("the merge's copy went at once: %v\n%s", err, m.stderr)
	}
	m.lock = f
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	return m
}

// release lets the merge commit again.
func (m *runningMerge) release() {
	if m.lock != nil {
		m.lock.Close()
		m.lock = nil
	}
}

// waitStderr waits until the merge said want on stderr or ended.
func (m *runningMerge) waitStderr(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(m.stderr.String(), want) {
		select {
		case <-m.exited:
			return
		case <-deadline:
			t.Fatalf("the merge did not say %q in 20s:\n%s", want, m.stderr)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// wait returns the merge's exit code (-1: killed by a signal).
func (m *runningMerge) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the merge did not end in 30s:\n%s", m.stderr)
	}
	return m.cmd.ProcessState.ExitCode()
}

// TestMergeInterruptEndToEnd: Ctrl-C, SIGTERM or kill -9 during
// `clipidx merge OUT IN` killed it and left OUT.merge-NUMBER, a full copy
// of OUT, which no later merge removed. Now a signal stops the merge at
// its next commit: exit 130, a message saying OUT is unchanged, OUT byte
// for byte as it was, no copy left. The copy a merge killed with SIGKILL
// leaves is removed by the next merge into OUT, which says so.
func TestMergeInterruptEndToEnd(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	big, out := filepath.Join(dir, "big.db"), filepath.Join(dir, "out.db")
	writeMergeIndex(t, big, "/big", 20000) // five commits of records
	writeMergeIndex(t, out, "/out", 10)
	was, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		now, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(now, was) {
			t.Errorf("out.db changed (%v)", err)
		}
		if left := mergeCopies(t, dir); left != nil {
			t.Errorf("left beside out.db: %v", left)
		}
	}

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			m := startMerge(t, bin, dir, out, big)
			if err := m.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			m.waitStderr(t, "stopping: "+out+" stays as it was")
			m.release()
			code := m.wait(t)
			if code != 130 {
				t.Errorf("exit %d after %v, want 130\n%s", code, sig, m.stderr)
			}
			if want := "clipidx: merge interrupted: " + out + " is unchanged and no partial copy is left"; !strings.Contains(m.stderr.String(), want) {
				t.Errorf("stderr after %v:\n%s\nwant %q", sig, m.stderr, want)
			}
			unchanged(t)
		})
	}

	// kill -9: the copy stays, out does not change; the next merge
	// removes the copy and says how much it freed.
	m := startMerge(t, bin, dir, out, big)
	left := m.copy
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	m.wait(t)
	m.release()
	if now, err := os.ReadFile(out); err != nil || !bytes.Equal(now, was) {
		t.Fatalf("a merge killed with SIGKILL changed out.db (%v)", err)
	}
	fi, err := os.Stat(left)
	if err != nil {
		t.Fatalf("the copy of a merge killed with SIGKILL: %v", err)
	}
	stdout, stderr, code := e2eRun(t, bin, "merge", out, big)
	if code != 0 {
		t.Fatalf("merge after a killed one: exit %d\n%s", code, stderr)
	}
	if want := fmt.Sprintf("removed %s, left by an interrupted compact or merge (%s freed", left, humanBytes(fi.Size())); !strings.Contains(stderr, want) {
		t.Errorf("stderr of the merge after a killed one:\n%s\nwant %q", stderr, want)
	}
	if !strings.Contains(stdout, "merged 20000 records from 1 index into "+out) {
		t.Errorf("stdout: %s", stdout)
	}
	if left := mergeCopies(t, dir); left != nil {
		t.Errorf("left beside out.db after a merge: %v", left)
	}
	if _, stderr, code := e2eRun(t, bin, "--db", out, "status", "--check"); code != 0 {
		t.Errorf("status --check of the merged index: exit %d\n%s", code, stderr)
	}
}
