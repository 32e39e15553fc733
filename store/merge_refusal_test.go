package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMergeRefusalWording: a refused merge names the input and OUT and
// what differs, and advises what a merge can do (a new OUT, rebuilding
// that input, leaving it out): never a flag merge does not have, nor a
// --reindex of OUT; the errors still match their sentinels.
func TestMergeRefusalWording(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "noexif.db"), filepath.Join(dir, "out.db")
	noEXIF := testID
	noEXIF.EXIF = false
	mergeFixture(t, in, noEXIF, map[string]string{"/d/1.jpg": "one"}, 1)
	mergeFixture(t, out, testID, map[string]string{"/d/2.jpg": "two"}, 1)
	other := filepath.Join(dir, "other.db")
	otherModel := testID
	otherModel.Model, otherModel.WeightsHash = "other-model", "def"
	mergeFixture(t, other, otherModel, map[string]string{"/d/3.jpg": "three"}, 1)
	faiss := filepath.Join(dir, "image.index")
	if err := os.WriteFile(faiss, append([]byte("IxFI"), make([]byte, 8192)...), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.db")
	mergeFixture(t, damaged, testID, map[string]string{"/d/4.jpg": "four"}, 1)
	if err := os.Truncate(damaged, 9000); err != nil {
		t.Fatal(err)
	}
	// Damaged an hour ago: a file written just now may be one being
	// copied onto, which a reader answers as changed, not damaged.
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(damaged, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	newOut := filepath.Join(dir, "new.db")

	for _, c := range []struct {
		name    string
		out     string
		ins     []string
		is      []error
		want    []string
		notWant []string
	}{
		{"EXIF differs from OUT's", out, []string{in}, []error{ErrMergeInput, ErrModelMismatch},
			[]string{in, out, "EXIF orientation", "new file", "clipidx --db " + in + " build --reindex --exif=true"},
			[]string{"pass --exif", "--db " + out}},
		{"model differs from OUT's", out, []string{other}, []error{ErrMergeInput, ErrModelMismatch},
			[]string{other, out, "other-model", "fake", "new file", "clipidx --db " + other + " --model MODEL build --reindex"},
			[]string{"pass the matching --model", "--db " + out}},
		{"inputs differ", newOut, []string{out, in}, []error{ErrMergeInput, ErrModelMismatch},
			[]string{in, out, "EXIF orientation", "clipidx --db " + in + " build --reindex --exif=true"},
			[]string{"pass --exif", "--db " + newOut}},
		{"input no index", newOut, []string{out, faiss}, []error{ErrMergeInput, ErrSchema},
			[]string{faiss, "not a clipidx index", "leave it out"},
			[]string{"--reindex", "give --db"}},
		{"OUT no index", faiss, []string{out}, []error{ErrMergeInput, ErrSchema},
			[]string{faiss, "not a clipidx index", "left as it was"},
			[]string{"--reindex", "give --db"}},
		{"input damaged", newOut, []string{damaged}, []error{ErrMergeInput, ErrCorrupt},
			[]string{damaged, "damaged", "clipidx --db " + damaged + " build --reindex", "leave it out"},
			[]string{"run `clipidx build --reindex DIR...` to start over"}},
		{"OUT damaged", damaged, []string{out}, []error{ErrMergeInput, ErrCorrupt},
			[]string{damaged, "damaged", "new file"},
			[]string{"--reindex"}},
	} {
		_, err := Merge(c.out, c.ins, WriterOptions{})
		if err == nil {
			t.Errorf("%s: merged", c.name)
			continue
		}
		msg := err.Error()
		for _, s := range c.is {
			if !errors.Is(err, s) {
				t.Errorf("%s: %v does not match %v", c.name, err, s)
			}
		}
		for _, s := range c.want {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: %q does not say %q", c.name, msg, s)
			}
		}
		for _, s := range c.notWant {
			if strings.Contains(msg, s) {
				t.Errorf("%s: %q says %q", c.name, msg, s)
			}
		}
	}
	if _, err := os.Stat(newOut); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused merge created %s (%v)", newOut, err)
	}
	if fi, err := os.Stat(faiss); err != nil || fi.Size() != 8196 {
		t.Errorf("a refused merge into %s changed it: %v %v", faiss, fi, err)
	}
}
