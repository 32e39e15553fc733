package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// compactFixture writes an index of n records at path, half under /k
// and half under /f, with metadata (so that it has a metadata column)
// and a few failures, plus a bucket no clipidx writes, holding a nested
// bucket and sequences (Compact copies whatever the file holds), and
// forgets /f: the file keeps the pages the forgotten half took.
func compactFixture(t *testing.T, path string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	w := openW(t, path)
	for lo := 0; lo < n; lo += 1000 {
		var b Batch
		for i := lo; i < min(lo+1000, n); i++ {
			p := fmt.Sprintf("/%s/%05d-%s.jpg", []string{"k", "f"}[i%2], i, strings.Repeat("x", 30))
			if i%50 == 0 {
				b.Put(p, File{Size: 3, MtimeNs: 4, Err: "decode: bad"}, nil)
				continue
			}
			c := fmt.Sprint("content ", i)
			b.Put(p, File{Size: int64(len(c)), MtimeNs: int64(i), Hash: hashOf(c)}, vec(uint64(i+1), testID.Dim))
			if i%3 > 0 {
				b.PutMeta(p, colMeta(r))
			}
		}
		commit(t, w, &b)
	}
	if err := w.Finish(LastBuild{Roots: []string{"/k", "/f"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	closeW(t, w)
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("zz-other"))
		if err != nil {
			return err
		}
		if err := b.SetSequence(41); err != nil {
			return err
		}
		if err := b.Put([]byte("empty"), []byte{}); err != nil {
			return err
		}
		nb, err := b.CreateBucket([]byte("nested"))
		if err != nil {
			return err
		}
		if err := nb.SetSequence(1 << 40); err != nil {
			return err
		}
		return nb.Put([]byte("k"), bytes.Repeat([]byte{9}, 9000)) // an overflow page
	})
	// A commit of the index's own after the foreign one, so that the
	// column is current again.
	w = openW(t, path)
	var b Batch
	b.Put("/k/last.jpg", File{Size: 1, Hash: hashOf("last")}, vec(99999, testID.Dim))
	commit(t, w, &b)
	closeW(t, w)
	if _, err := Forget(path, []string{"/f"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dumpIndex is every bucket of the bbolt file at path, nested ones
// included, as "bucket/path seq=N" and "bucket/path key=value" lines
// (hex), in order, with the transaction id it was read at.
func dumpIndex(t *testing.T, path string) (lines []string, txid int) {
	t.Helper()
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var walk func(name string, b *bolt.Bucket)
	walk = func(name string, b *bolt.Bucket) {
		lines = append(lines, fmt.Sprintf("%s seq=%d", name, b.Sequence()))
		b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(fmt.Sprintf("%s/%x", name, k), b.Bucket(k))
				return nil
			}
			lines = append(lines, fmt.Sprintf("%s %x=%x", name, k, v))
			return nil
		})
	}
	db.View(func(tx *bolt.Tx) error {
		txid = tx.ID()
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			walk(fmt.Sprintf("%x", name), b)
			return nil
		})
	})
	return lines, txid
}

// firstDiff says where two dumps part.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: %.120s\nnow:    %.120s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("%d lines, now %d", len(a), len(b))
}

// TestCompactGivesSpaceBack: after forget, the file kept its size for
// ever (bbolt keeps its free pages). Compact gives the space back with
// every bucket, key, value and sequence byte for byte as it was, the
// file's mode and its transaction id kept (the metadata column stays
// current), and the index goes on as before: a reader open across the
// compaction reads what it read, later commits work and check out.
func TestCompactGivesSpaceBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	compactFixture(t, path, 6000)
	// A mode the umask would cut (022: 0o640), as a group's shared index.
	if err := os.Chmod(path, 0o660); err != nil {
		t.Fatal(err)
	}
	before, txid := dumpIndex(t, path)
	if len(before) < 6000 {
		t.Fatalf("the fixture's dump has only %d lines", len(before))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var free int64
	view(t, path, func(s *Snapshot) {
		if col, err := s.MetaColumn(); col == nil || err != nil {
			t.Fatalf("the fixture has no current metadata column (%v)", err)
		}
		if free, err = s.FreeBytes(); err != nil {
			t.Fatal(err)
		}
	})
	if free < fi.Size()/4 {
		t.Fatalf("the fixture has %d bytes free of %d: forget freed too little to test", free, fi.Size())
	}
	across, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer across.Close()
	files := func(r *Reader) map[string]File {
		out := map[string]File{}
		if err := r.View(func(s *Snapshot) error {
			return s.Files("", func(p string, f File) error { out[p] = f; return nil })
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	was := files(across)

	sum, err := Compact(context.Background(), path, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, txid2 := dumpIndex(t, path)
	if !slices.Equal(before, after) {
		t.Errorf("compact changed the buckets: %s", firstDiff(before, after))
	}
	if txid2 != txid {
		t.Errorf("transaction id %d after compact, want %d as before", txid2, txid)
	}
	nfi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Path != path || sum.Before != fi.Size() || sum.After != nfi.Size() {
		t.Errorf("summary %+v; the file was %d bytes, is %d", sum, fi.Size(), nfi.Size())
	}
	if nfi.Size() > fi.Size()-free/2 {
		t.Errorf("compact of a file of %d bytes, %d free, left %d", fi.Size(), free, nfi.Size())
	}
	if nfi.Mode().Perm() != 0o660 {
		t.Errorf("mode %v after compact, want -rw-rw----", nfi.Mode().Perm())
	}
	view(t, path, func(s *Snapshot) {
		if col, err := s.MetaColumn(); col == nil || err != nil {
			t.Errorf("no current metadata column after compact (%v): every filtered search reads the records", err)
		}
		if n, err := s.FreeBytes(); err != nil || n > 64<<10 {
			t.Errorf("%d bytes free after compact (%v)", n, err)
		}
	})
	mustCheck(t, path, true)
	if now := files(across); !mapsEqual(now, was) {
		t.Errorf("a reader open across the compaction reads %d records, %d before", len(now), len(was))
	}
	fresh, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now := files(fresh); !mapsEqual(now, was) {
		t.Errorf("a reader opened after the compaction reads %d records, %d before", len(now), len(was))
	}
	fresh.Close()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "x.db" && e.Name() != "x.db.lock" {
			t.Errorf("left beside the index: %s", e.Name())
		}
	}

	// The index goes on: commits (each meta page in turn) and a reopen.
	for i := range 3 {
		w := openW(t, path)
		var b Batch
		p := fmt.Sprintf("/k/new-%d.jpg", i)
		b.Put(p, File{Size: 2, Hash: hashOf(p)}, vec(uint64(100000+i), testID.Dim))
		b.PutMeta(p, Meta{Make: "M"})
		commit(t, w, &b)
		closeW(t, w)
		columnOK(t, path, fmt.Sprint("commit ", i, " after compact"))
	}
	if _, err := Forget(path, []string{"/k/new-0.jpg"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, path, true)
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCompactThroughLink: an index named by a symbolic link is compacted
// where the link leads; the link stays a link.
func TestCompactThroughLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	compactFixture(t, real, 1000)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	before, _ := dumpIndex(t, real)
	if _, err := Compact(context.Background(), link, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v, %v", fi.Mode(), err)
	}
	if after, _ := dumpIndex(t, real); !slices.Equal(before, after) {
		t.Errorf("compact through a link changed the buckets: %s", firstDiff(before, after))
	}
}

// TestCompactRefuses: a missing or empty index, a file that is no
// index, a damaged one and one a build holds are refused, naming the
// file, and nothing in the folder changes.
func TestCompactRefuses(t *testing.T) {
	other := func(t *testing.T, path string) {
		rawUpdate(t, path, func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("settings"))
			return err
		})
	}
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		want  error
		words string
	}{
		{"missing", func(*testing.T, string) {}, ErrNoIndex, "no index yet"},
		{"empty", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o644) }, ErrNoIndex, "empty"},
		{"text", func(t *testing.T, path string) { os.WriteFile(path, []byte("hello, not an index\n"), 0o644) }, ErrNotIndex, "not a clipidx index"},
		{"other bbolt file", other, ErrNotIndex, `"settings"`},
		{"damaged", func(t *testing.T, path string) { damagedIndex(t, path, 300, 7) }, ErrCorrupt, "build --reindex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.db")
			tc.make(t, path)
			was := folderState(t, dir)
			_, err := Compact(context.Background(), path, CompactOptions{})
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), path) || !strings.Contains(fmt.Sprint(err), tc.words) {
				t.Errorf("Compact: %v; want %v naming %s and saying %q", err, tc.want, path, tc.words)
			}
			if diff := sameFolder(was, folderState(t, dir)); diff != nil && !slices.Equal(diff, []string{"x.db.lock added"}) {
				t.Errorf("a refused compact changed the folder: %v", diff)
			}
		})
	}
	t.Run("build running", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.db")
		compactFixture(t, path, 100)
		w := openW(t, path)
		was := folderState(t, dir)
		_, err := Compact(context.Background(), path, CompactOptions{})
		if !errors.Is(err, ErrBuildRunning) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Errorf("Compact while a writer holds the index: %v, want ErrBuildRunning naming the holder", err)
		}
		if diff := sameFolder(was, folderState(t, dir)); diff != nil {
			t.Errorf("a refused compact changed the folder: %v", diff)
		}
		closeW(t, w)
	})
}

// stopAfter is a context whose Err is context.Canceled from its nth
// call on: Compact stopped at each point it looks.
type stopAfter struct {
	context.Context
	n, calls atomic.Int64
}

func (c *stopAfter) Err() error {
	if c.calls.Add(1) >= c.n.Load() {
		return context.Canceled
	}
	return nil
}

// TestCompactStopped: a compaction stopped at any point returns
// context.Canceled and leaves the folder as it was, the index byte for
// byte, no new file left.
func TestCompactStopped(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	compactFixture(t, path, 3000)
	was := folderState(t, dir)
	for n := int64(1); ; n++ {
		ctx := &stopAfter{Context: context.Background()}
		ctx.n.Store(n)
		_, err := Compact(ctx, path, CompactOptions{})
		if err == nil {
			if n < 3 {
				t.Fatalf("a compaction looked at its context only %d times", n-1)
			}
			t.Logf("stopped at each of %d looks", n-1)
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at look %d: %v, want context.Canceled", n, err)
		}
		if diff := sameFolder(was, folderState(t, dir)); diff != nil {
			t.Fatalf("stopped at look %d, the folder changed: %v", n, diff)
		}
	}
	mustCheck(t, path, true)
}

// TestCompactRemovesLeftovers: the new file of a compaction killed
// outright (SIGKILL, a power cut) stays beside the index; the next
// compaction removes it and says so.
func TestCompactRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	compactFixture(t, path, 200)
	// What a killed compaction leaves: its file, named as createBeside
	// names it, part written.
	f, err := createBeside(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte{1}, 5000))
	f.Close()
	var heard []Leftover
	if _, err := Compact(context.Background(), path, CompactOptions{OnLeftover: func(l Leftover) { heard = append(heard, l) }}); err != nil {
		t.Fatal(err)
	}
	if want := []Leftover{{Path: f.Name(), Size: 5000}}; !slices.Equal(heard, want) {
		t.Errorf("OnLeftover heard %+v, want %+v", heard, want)
	}
	if _, err := os.Stat(f.Name()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed compaction's file is still there: %v", err)
	}
}
