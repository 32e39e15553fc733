package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// manyRecords writes an index of n records /m/NNNNN.jpg at path, each with
// its own vector.
func manyRecords(t *testing.T, path string, n int) {
	t.Helper()
	w := openW(t, path)
	var b Batch
	for i := range n {
		c := fmt.Sprint("many ", i)
		b.Put(fmt.Sprintf("/m/%05d.jpg", i), File{Size: int64(len(c)), MtimeNs: 5, Hash: hashOf(c)}, vec(uint64(i+1), testID.Dim))
	}
	commit(t, w, &b)
	if err := w.Finish(LastBuild{Roots: []string{"/m"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
}

// TestMergeCancelled: Ctrl-C during a merge killed the process and left
// out's full-size copy (out.merge-NUMBER) behind. A merge whose context
// is cancelled after its first commit of records (or before it began)
// must stop there, return context.Canceled, and leave the folder as it
// was: out byte for byte, no copy, no gate.
func TestMergeCancelled(t *testing.T) {
	dir := t.TempDir()
	big, out := filepath.Join(dir, "big.db"), filepath.Join(dir, "out.db")
	manyRecords(t, big, 3*mergeCommit+10)
	mergeFixture(t, out, testID, map[string]string{"/f/1.jpg": "one"}, 1)
	before := folderState(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls []MergeProgress
	_, err := MergeContext(ctx, out, []string{big}, MergeOptions{Progress: func(p MergeProgress) {
		calls = append(calls, p)
		cancel()
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("merge cancelled after its first commit: %v, want context.Canceled", err)
	}
	if want := []MergeProgress{{Done: mergeCommit, Total: 3*mergeCommit + 10}}; !slices.Equal(calls, want) {
		t.Errorf("progress of a merge cancelled at its first commit: %v, want %v", calls, want)
	}
	if d := sameFolder(before, folderState(t, dir)); d != nil {
		t.Errorf("a cancelled merge changed the folder: %v", d)
	}

	// Cancelled before it began: out is not even copied.
	if _, err := MergeContext(ctx, out, []string{big}, MergeOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("merge with a cancelled context: %v, want context.Canceled", err)
	}
	// Into an out that does not exist: only its lock file is made.
	cancelled := 0
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	fresh := filepath.Join(dir, "fresh.db")
	_, err = MergeContext(ctx2, fresh, []string{big}, MergeOptions{Progress: func(MergeProgress) { cancelled++; cancel2() }})
	if !errors.Is(err, context.Canceled) || cancelled != 1 {
		t.Errorf("merge into a new index cancelled at its first commit: %v after %d commits, want context.Canceled after 1", err, cancelled)
	}
	if d := sameFolder(before, folderState(t, dir)); !slices.Equal(d, []string{"fresh.db.lock added"}) {
		t.Errorf("cancelled merges left %v, want fresh.db's lock file alone", d)
	}

	// The same merge, not cancelled, goes through.
	sum, err := Merge(out, []string{big}, WriterOptions{})
	if err != nil || sum.Files != 3*mergeCommit+10 {
		t.Fatalf("merge after the cancelled ones: %+v, %v", sum, err)
	}
	if got := readAll(t, out); len(got) != 3*mergeCommit+11 {
		t.Errorf("out holds %d records, want %d", len(got), 3*mergeCommit+11)
	}
}

// TestMergeRemovesLeftovers: a merge killed outright (SIGKILL) leaves its
// copy out.merge-NUMBER, and the next merge never removed it, so each
// killed merge cost another copy of out. The next merge into out, holding
// out's lock, removes the copies named as createBeside names them (and
// their commit gates), and nothing else.
func TestMergeRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	a, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "out.db")
	mergeFixture(t, a, testID, map[string]string{"/e/1.jpg": "one"}, 1)
	mergeFixture(t, out, testID, map[string]string{"/f/2.jpg": "two"}, 1)
	outBytes, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What killed merges leave: copies of out, one with its gate.
	left := []string{
		"out.db.merge-" + strconv.FormatUint(0x9e3779b97f4a7c15, 36),
		"out.db.merge-" + strconv.FormatUint(1<<64-1, 36),
		"out.db.merge-0",
		"out.db.merge-0.gate",
	}
	for _, n := range left {
		write(n, outBytes)
	}
	// Names no merge gives its copy, or not a copy's.
	kept := []string{
		"out.db.merge-",                 // no number
		"out.db.merge-ABC",              // not base 36 as FormatUint writes it
		"out.db.merge-3w5e11264sgsg",    // past a uint64
		"out.db.merge-12.bak",           // something else
		"out.db.merge-12.gate.old",      // something else
		"out.db.merge-zz",               // an index someone named so: it has its lock
		"out.db.merge-zz.lock",          // that lock
		"other.db.merge-12",             // another index's copy
		"xout.db.merge-12",              // another index's copy
		"out.db.merge-12" + "\u00a0",    // not only the number
		"out.db.lock.merge-12",          // a copy of no index
		"out.db.merge-1z141z3.merge-12", // a copy of out.db.merge-1z141z3, not of out
	}
	for _, n := range kept {
		write(n, []byte("keep"))
	}
	if err := os.Mkdir(filepath.Join(dir, "out.db.merge-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, "out.db.merge-dir")
	if err := os.Symlink("a.db", filepath.Join(dir, "out.db.merge-link")); err == nil {
		kept = append(kept, "out.db.merge-link")
	}

	if _, err := Merge(out, []string{a}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range left {
		if _, err := os.Lstat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, left by a killed merge, is still there after the next merge (%v)", n, err)
		}
	}
	for _, n := range kept {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s is no copy left by a merge, but the merge removed it: %v", n, err)
		}
	}
	if got := readAll(t, out); len(got) != 2 {
		t.Errorf("out holds %d records after the merge, want 2", len(got))
	}
}

// TestMergeReportsLeftovers: the copies removed are told to OnLeftover
// with their sizes (the command says how much was freed), through a link
// named as out too (the copies are named after the file it leads to).
func TestMergeReportsLeftovers(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // as the link resolves
	if err != nil {
		t.Fatal(err)
	}
	a, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "out.db")
	mergeFixture(t, a, testID, map[string]string{"/e/1.jpg": "one"}, 1)
	mergeFixture(t, out, testID, map[string]string{"/f/2.jpg": "two"}, 1)
	copyPath := out + ".merge-2k1e0vx9m4ho"
	if err := os.WriteFile(copyPath, bytes.Repeat([]byte{7}, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(out, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	var got []Leftover
	if _, err := MergeContext(context.Background(), link, []string{a}, MergeOptions{OnLeftover: func(l Leftover) { got = append(got, l) }}); err != nil {
		t.Fatal(err)
	}
	if want := []Leftover{{Path: copyPath, Size: 12345}}; !slices.Equal(got, want) {
		t.Errorf("OnLeftover heard %+v, want %+v", got, want)
	}
	if _, err := os.Stat(copyPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover copy is still there: %v", err)
	}
	// Nothing left: nothing told.
	got = nil
	if _, err := MergeContext(context.Background(), out, []string{a}, MergeOptions{OnLeftover: func(l Leftover) { got = append(got, l) }}); err != nil {
		t.Fatal(err)
	}
	if got != nil {
		t.Errorf("OnLeftover heard %+v with nothing left", got)
	}
}
