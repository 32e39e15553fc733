package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigIndex writes an index spread over many pages (a few hundred files and
// vectors) and returns its path and size.
func bigIndex(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	for c := 0; c < 4; c++ {
		var b Batch
		for i := 0; i < 100; i++ {
			n := c*100 + i
			b.Put(fmt.Sprintf("/photos/%04d-%s.jpg", n, strings.Repeat("x", 40)), File{Hash: hashOf(fmt.Sprint(n))}, vec(uint64(n+1), 8))
		}
		commit(t, w, &b)
	}
	closeW(t, w)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 8*4096 {
		t.Fatalf("index is only %d bytes; the damage tests need more pages", fi.Size())
	}
	return path, fi.Size()
}

// TestTruncatedIndex: a file cut short (a full disk, a copy interrupted)
// made bbolt read its memory map past the end of the file, a SIGBUS that
// killed the process whatever recover did. Every way in must now report
// ErrCorrupt, and a Reindex writer must move the file aside and start over.
func TestTruncatedIndex(t *testing.T) {
	for _, size := range []int64{10000, 3 * 4096, 4096, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			path, _ := bigIndex(t)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			if r, err := OpenReader(path, ReaderOptions{}); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					// Say what reading the damaged file then did.
					err = r.View(func(s *Snapshot) error { _, err := s.Stats(); return err })
					err = errors.Join(err, r.Close())
				}
				t.Errorf("OpenReader: %v, want ErrCorrupt", err)
			}
			if err := Check(path); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check: %v, want ErrCorrupt", err)
			}
			if _, err := Forget(path, []string{"/photos"}, WriterOptions{}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Forget: %v, want ErrCorrupt", err)
			}
			if w, err := OpenWriter(path, testID, WriterOptions{}); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					closeW(t, w)
				}
				t.Errorf("OpenWriter: %v, want ErrCorrupt", err)
			}
			w, err := OpenWriter(path, testID, WriterOptions{Reindex: true})
			if err != nil {
				t.Fatalf("OpenWriter with Reindex: %v", err)
			}
			defer closeW(t, w)
			if w.Backup() == "" {
				t.Fatal("Reindex did not move the damaged file aside")
			}
			if fi, err := os.Stat(w.Backup()); err != nil || fi.Size() != size {
				t.Errorf("backup %s: %v, size %v, want the %d damaged bytes", w.Backup(), err, fi, size)
			}
			var b Batch
			b.Put("/p/new", File{Hash: hashOf("N")}, vec(3, 8))
			commit(t, w, &b)
			mustCheck(t, path, false)
		})
	}
}

// onlyColumn reports whether every line of a Check error is about the
// metadata column.
func onlyColumn(err error) bool {
	for _, l := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(l, "metadata column") {
			return false
		}
	}
	return true
}

// randomize overwrites bytes [from, to) of the file at path with seeded
// random bytes.
func randomize(t *testing.T, path string, from, to int64, seed uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for i := from; i < to && i < int64(len(b)); i++ {
		b[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedPages damages one page body at a time (its header kept, so
// bbolt still takes it for what it was), then everything after the meta
// pages. Whatever the damage: nothing panics; when Check passes, a build
// can write to the index and the result still checks out (a free list of
// garbage once passed Check and then failed every commit with "negative
// offset"); when it does not, a Reindex writer moves the file aside and
// starts over.
func TestDamagedPages(t *testing.T) {
	src, size := bigIndex(t)
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	type damage struct {
		name     string
		from, to int64
	}
	var cases []damage
	for p := int64(2); p < size/4096; p++ {
		cases = append(cases, damage{fmt.Sprintf("page %d", p), p*4096 + boltPageHeader, (p + 1) * 4096})
	}
	cases = append(cases, damage{"after the metas", 2 * 4096, size})
	caught := 0
	for i, tc := range cases {
		path := filepath.Join(t.TempDir(), "x.db")
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		randomize(t, path, tc.from, tc.to, uint64(i))
		if err := Check(path); err != nil {
			caught++
			w, err2 := OpenWriter(path, testID, WriterOptions{Reindex: true})
			if err2 != nil {
				t.Errorf("%s: Check reports %v, but Reindex fails: %v", tc.name, firstLine(err), err2)
				continue
			}
			// Damage to the metadata column alone is mended in place (it
			// derives from the records); any other damage moves the file aside.
			if w.Backup() == "" && !onlyColumn(err) {
				t.Errorf("%s: Reindex kept the damaged file (%v)", tc.name, firstLine(err))
			}
			closeW(t, w)
			mustCheck(t, path, false)
			continue
		}
		w, err := OpenWriter(path, testID, WriterOptions{})
		if err != nil {
			t.Errorf("%s: Check passes, OpenWriter fails: %v", tc.name, err)
			continue
		}
		var b Batch
		for j := 0; j < 50; j++ {
			b.Put(fmt.Sprintf("/new/%03d", j), File{Hash: hashOf(fmt.Sprint("new", j))}, vec(uint64(1000+j), 8))
		}
		b.Delete("/photos/0000-" + strings.Repeat("x", 40) + ".jpg")
		err = w.Commit(&b)
		if err == nil {
			_, err = w.GC()
		}
		closeW(t, w)
		if err != nil {
			t.Errorf("%s: Check passes, a commit fails: %v", tc.name, err)
			continue
		}
		if err := Check(path); err != nil {
			t.Errorf("%s: Check passed, a commit left damage: %v", tc.name, firstLine(err))
		}
	}
	if caught == 0 {
		t.Error("Check caught no damage at all")
	}
	t.Logf("%d of %d damages caught by Check", caught, len(cases))
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func TestStandardLibrary(t *testing.T) {
	for fn, want := range map[string]bool{
		"fmt.(*pp).doPrintf":                      true,
		"encoding/json.(*decodeState).object":     true,
		"slices.SortFunc[go.shape.[]uint8,x/y.T]": true,
		"go.etcd.io/bbolt.(*Tx).page":             false,
		"github.com/clipidx/clipidx/store.guard":  false,
		"main.newStatusCmd.func1":                 false,
		"example.com/m.F[go.shape.int].func1":     false,
	} {
		if got := standardLibrary(fn); got != want {
			t.Errorf("standardLibrary(%q) = %v, want %v", fn, got, want)
		}
	}
}

// pointPastTheEnd writes orig cut to pages pages, with both meta pages
// claiming exactly that many and no stored free list (so validateFile
// passes), and the first element of every branch page pointing at page
// target, past the new end. It reports false when it cannot.
func pointPastTheEnd(t *testing.T, orig []byte, pages, target uint64) (string, bool) {
	t.Helper()
	b := append([]byte(nil), orig[:pages*4096]...)
	for _, off := range []int{boltPageHeader, 4096 + boltPageHeader} {
		m := b[off : off+boltMetaSize]
		if mm, ok := parseMeta(m); !ok || mm.root >= pages {
			return "", false
		}
		binary.NativeEndian.PutUint64(m[32:], boltNoFreelist)
		binary.NativeEndian.PutUint64(m[40:], pages)
		h := fnv.New64a()
		h.Write(m[:boltMetaSummed])
		binary.NativeEndian.PutUint64(m[56:], h.Sum64())
	}
	branch := false
	for p := uint64(2); p < pages; p++ {
		page := b[p*4096:]
		if h := parseHeader(page); h.id == p && h.flags == boltBranchPage && h.count > 0 {
			binary.NativeEndian.PutUint64(page[boltPageHeader+8:], target)
			branch = true
		}
	}
	path := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, branch
}

// TestFaultIsCorrupt: a read of a page past the end of the file faults
// (SIGBUS: bbolt maps more than the file holds), which once killed the
// process whatever recover did; guard turns it into ErrCorrupt.
func TestFaultIsCorrupt(t *testing.T) {
	src, size := bigIndex(t)
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	faults := 0
	for pages := uint64(3); pages < uint64(size/4096); pages++ {
		// bbolt maps the next power of two (≥ 32 KiB): aim inside it.
		mapped := uint64(32 << 10)
		for mapped < pages*4096 {
			mapped *= 2
		}
		if mapped/4096 <= pages {
			continue
		}
		path, ok := pointPastTheEnd(t, orig, pages, pages)
		if !ok {
			continue
		}
		r, err := OpenReader(path, ReaderOptions{})
		if err == nil {
			err = r.View(func(s *Snapshot) error {
				return s.Files("", func(string, File) error { return nil })
			})
			err = errors.Join(err, r.Close())
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d pages: %v, want ErrCorrupt", pages, err)
		}
		if err != nil && strings.Contains(err.Error(), "invalid memory address") {
			faults++
		}
	}
	if faults == 0 {
		t.Fatal("no length made a read fault: the test checks nothing")
	}
	t.Logf("%d lengths faulted", faults)
}
