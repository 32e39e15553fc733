package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// folderState is the name and bytes of every file in dir.
func folderState(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil && e.Type()&os.ModeSymlink == 0 {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// sameFolder reports how after differs from before (nil when it does not).
func sameFolder(before, after map[string][]byte) []string {
	var diff []string
	for n, b := range before {
		if a, ok := after[n]; !ok {
			diff = append(diff, n+" removed")
		} else if !bytes.Equal(a, b) {
			diff = append(diff, n+" changed")
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			diff = append(diff, n+" added")
		}
	}
	slices.Sort(diff)
	return diff
}

// TestMergeRefusesSameFile: an input that is the output (or another
// input) under another name was merged into itself: a link or a hard
// link passed the name check. Each is now refused before anything is
// read or written.
func TestMergeRefusesSameFile(t *testing.T) {
	dir := t.TempDir()
	a, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "out.db")
	mergeFixture(t, a, testID, map[string]string{"/d/1.jpg": "one"}, 1)
	mergeFixture(t, out, testID, map[string]string{"/d/2.jpg": "two"}, 1)
	link, hard, dirLink := filepath.Join(dir, "link.db"), filepath.Join(dir, "hard.db"), filepath.Join(t.TempDir(), "folder")
	if err := os.Symlink(out, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.Link(out, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	aLink := filepath.Join(dir, "a-link.db")
	if err := os.Symlink("a.db", aLink); err != nil { // relative to its folder
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range []struct {
		name string
		out  string
		ins  []string
	}{
		{"input is a link to out", out, []string{a, link}},
		{"input is a hard link of out", out, []string{hard, a}},
		{"out is a link to an input", link, []string{a, out}},
		{"input through a linked folder", out, []string{a, filepath.Join(dirLink, "out.db")}},
		{"input relative, out with /./", dir + "/./out.db", []string{"a.db", "out.db"}},
		{"two inputs, one a link to the other", filepath.Join(dir, "new.db"), []string{a, aLink}},
		{"two inputs, relative and absolute", filepath.Join(dir, "new.db"), []string{"./a.db", a}},
		// Refused before the missing input is even looked for.
		{"before any work", out, []string{filepath.Join(dir, "missing.db"), link}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := folderState(t, dir)
			_, err := Merge(c.out, c.ins, WriterOptions{})
			if !errors.Is(err, ErrMergeInput) {
				t.Errorf("Merge(%s, %v): %v, want ErrMergeInput", c.out, c.ins, err)
			}
			if d := sameFolder(before, folderState(t, dir)); d != nil {
				t.Errorf("a refused merge wrote: %v", d)
			}
		})
	}
}

// damagedIndex writes an index of n records /d/NNNNN.jpg and overwrites
// the record of /d/{bad}.jpg with garbage: a reader meets it only after
// more than mergeCommit records when bad is past that.
func damagedIndex(t *testing.T, path string, n, bad int) {
	t.Helper()
	w := openW(t, path)
	var b Batch
	for i := range n {
		c := fmt.Sprint("content ", i)
		b.Put(fmt.Sprintf("/d/%05d.jpg", i), File{Size: int64(len(c)), MtimeNs: 7, Hash: hashOf(c)}, vec(uint64(i+1), testID.Dim))
	}
	commit(t, w, &b)
	if err := w.Finish(LastBuild{Roots: []string{"/d"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bFiles).Put(fmt.Appendf(nil, "/d/%05d.jpg", bad), []byte{0xff, 1, 2})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMergeFailsWhole: a merge whose second input is damaged past its
// first mergeCommit records left out with the first input and those
// records committed. out must be as it was, byte for byte, with no
// temporary file left, whether it existed or not.
func TestMergeFailsWhole(t *testing.T) {
	dir := t.TempDir()
	a, bad, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "bad.db"), filepath.Join(dir, "out.db")
	mergeFixture(t, a, testID, map[string]string{"/e/1.jpg": "one", "/e/2.jpg": "two"}, 1)
	damagedIndex(t, bad, mergeCommit+500, mergeCommit+400)
	mergeFixture(t, out, testID, map[string]string{"/f/3.jpg": "three"}, 1)
	if runtime.GOOS != "windows" {
		if err := os.Chmod(out, 0o640); err != nil {
			t.Fatal(err)
		}
	}

	before := folderState(t, dir)
	_, err := Merge(out, []string{a, bad}, WriterOptions{})
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("merge of a damaged input: %v, want ErrCorrupt", err)
	}
	if d := sameFolder(before, folderState(t, dir)); d != nil {
		t.Errorf("a failed merge changed the folder: %v", d)
	}

	// Into an output that does not exist: none is created.
	fresh := filepath.Join(dir, "fresh.db")
	if _, err := Merge(fresh, []string{a, bad}, WriterOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("merge of a damaged input into a new index: %v, want ErrCorrupt", err)
	}
	if d := sameFolder(before, folderState(t, dir)); !slices.Equal(d, []string{"fresh.db.lock added"}) {
		t.Errorf("a failed merge into a new index left %v, want its lock file alone", d)
	}

	// A merge that succeeds replaces out through a link to it, keeping
	// the link and out's mode.
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(out, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if _, err := Merge(link, []string{a}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, out); len(got) != 3 {
		t.Errorf("out holds %d records after the merge, want 3", len(got))
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link named as output was replaced: %v %v", fi, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("out's mode after the merge: %v %v, want 0640", fi, err)
	}
	after := folderState(t, dir)
	delete(after, "out.db")
	delete(before, "out.db")
	if d := sameFolder(before, after); !slices.Equal(d, []string{"fresh.db.lock added"}) {
		t.Errorf("a merge left %v beside out", d)
	}
}
