package preprocess

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/flock"
)

// TestWASMCodeCacheDamagedHeader damages the HEIC decoder's kept code in
// the bytes before its machine code (the function offsets, which
// wazero's own checksum does not cover), where wazero used to panic in
// InstantiateModule and every HEIC failed as a corrupt image. Each decode
// must give the pixels of a fresh cache, report the damage through
// CodeCache, and keep a sound entry again that the next decode loads
// as it is. One compile fills the cache; each offset then compiles once
// (-short tries one offset).
func TestWASMCodeCacheDamagedHeader(t *testing.T) {
	data, err := os.ReadFile("testdata/heif/yuv420.heic")
	if err != nil {
		t.Fatal(err)
	}
	saved := heifModule
	defer func() { heifModule = saved; SetCodeCache("") }()
	decode := func(t *testing.T, label string) (px []byte) {
		t.Helper()
		heifModule = &wasmModule{gz: &heifWASMgz} // compiled afresh, as in a new process
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s: decode panicked: %v", label, p)
			}
		}()
		img, err := libheifDecode(context.Background(), data, nil)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, a := img.At(x, y).RGBA()
				px = append(px, byte(r>>8), byte(g>>8), byte(bl>>8), byte(a>>8))
			}
		}
		return px
	}

	fresh := filepath.Join(t.TempDir(), "code")
	SetCodeCache(fresh)
	want := decode(t, "fresh cache")
	kept := readTree(t, fresh)
	entry := keptEntry(t, fresh)
	rel, err := filepath.Rel(fresh, entry)
	if err != nil {
		t.Fatal(err)
	}
	good := kept[rel]

	offsets := []int{24, 100, 1000, 4000}
	if testing.Short() {
		offsets = offsets[1:2]
	}
	for _, off := range offsets {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "code")
			writeTree(t, dir, kept)
			damaged := slices.Clone(good)
			copy(damaged[off:], "\x7f\x31\xa5\x02")
			entry := filepath.Join(dir, rel)
			if err := os.WriteFile(entry, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			SetCodeCache(dir)
			if got := decode(t, "damaged cache"); !slices.Equal(got, want) {
				t.Fatal("pixels differ from those with a fresh cache")
			}
			if _, _, err := CodeCache(); err == nil {
				t.Error("CodeCache reports no problem after a damaged entry")
			}
			now, err := os.ReadFile(entry)
			if err != nil {
				t.Fatalf("no entry kept again: %v", err)
			}
			if bytes.Equal(now, damaged) {
				t.Fatal("the damaged entry is still kept")
			}
			before, err := os.Stat(entry)
			if err != nil {
				t.Fatal(err)
			}

			SetCodeCache(dir) // clears the note
			if got := decode(t, "repaired cache"); !slices.Equal(got, want) {
				t.Fatal("pixels differ from the repaired cache")
			}
			if _, _, err := CodeCache(); err != nil {
				t.Errorf("the repaired cache: %v", err)
			}
			if after, err := os.Stat(entry); err != nil || !os.SameFile(before, after) {
				t.Errorf("the repaired entry was not loaded as it was but kept again (%v)", err)
			}
		})
	}
}

// keptEntry is the one file wazero keeps under dir (the HEIC decoder's).
func keptEntry(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*", "wazero-*", "*"))
	if err != nil || len(m) != 1 {
		t.Fatalf("want one entry kept by wazero in %s, found %q (%v)", dir, m, err)
	}
	return m[0]
}

// readTree reads every regular file under dir, by its path relative to it.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil {
			files[rel], err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// writeTree writes files (as readTree gives them) under dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for rel, b := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCodeSeal checks, without compiling, which kept files checkCodeSeal
// lets wazero read: only those sealCode sealed, as they were sealed.
func TestCodeSeal(t *testing.T) {
	sub := t.TempDir()
	entry := filepath.Join(sub, "wazero-v-arch-os", "f00d")
	put := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(label string, wantOK bool) {
		t.Helper()
		sums, err := checkCodeSeal(sub)
		if wantOK && (err != nil || len(sums) == 0) {
			t.Errorf("%s: %d sums, %v; want the entry's sum and no error", label, len(sums), err)
		}
		if !wantOK && err == nil {
			t.Errorf("%s: no error", label)
		}
	}
	if sums, err := checkCodeSeal(sub); sums != nil || err != nil {
		t.Errorf("empty folder: %v, %v; want nothing", sums, err)
	}
	if sums, err := checkCodeSeal(filepath.Join(sub, "missing")); sums != nil || err != nil {
		t.Errorf("missing folder: %v, %v; want nothing", sums, err)
	}

	put(entry, "machine code")
	check("entry without a seal (an older clipidx)", false)
	if err := sealCode(sub, nil); err != nil {
		t.Fatal(err)
	}
	check("sealed entry", true)
	put(entry+".123.tmp", "a write in progress")
	check("sealed entry beside a write in progress", true)

	seal := filepath.Join(sub, codeSealName)
	sealed, err := os.Stat(seal)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := checkCodeSeal(sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := sealCode(sub, sums); err != nil {
		t.Fatal(err)
	}
	if now, err := os.Stat(seal); err != nil || !os.SameFile(sealed, now) {
		t.Errorf("nothing new was kept but the seal was written again (%v)", err)
	}

	put(entry, "machine codf")
	check("damaged entry", false)
	put(entry, "machine code")
	check("entry as sealed again", true)

	other := filepath.Join(sub, "wazero-v-arch-os", "beef")
	put(other, "unsealed")
	check("a file the seal does not list", false)
	if err := sealCode(sub, sums); err != nil {
		t.Fatal(err)
	}
	check("both sealed", true)

	b, err := os.ReadFile(seal)
	if err != nil {
		t.Fatal(err)
	}
	magic, lines, _ := strings.Cut(string(b), "\n")
	for _, c := range []struct{ label, text string }{
		{"damaged seal magic", "X" + magic[1:] + "\n" + lines},
		{"damaged seal line", magic + "\n" + "g" + lines[1:]},
		{"seal without its lines", magic + "\n"},
		{"empty seal", ""},
	} {
		put(seal, c.text)
		check(c.label, false)
	}
}

// TestCodeCacheWaitsForAnotherCompile: a process that finds the code
// cache's entry kept but not yet sealed, while another process compiles
// into it (and holds the lock), waits for that compile rather than taking
// the entry for damage and removing it (a recompile and a spurious note
// in both processes). The lock is held here through a file of its own,
// as another process would hold it.
func TestCodeCacheWaitsForAnotherCompile(t *testing.T) {
	if !flock.Supported {
		t.Skip("no flock on this system: two processes compiling into one cache are not kept apart")
	}
	data, err := os.ReadFile("testdata/heif/yuv420.heic")
	if err != nil {
		t.Fatal(err)
	}
	saved := heifModule
	defer func() { heifModule = saved; SetCodeCache("") }()
	decode := func() error {
		heifModule = &wasmModule{gz: &heifWASMgz} // compiled afresh, as in a new process
		_, err := libheifDecode(context.Background(), data, nil)
		return err
	}
	fresh := filepath.Join(t.TempDir(), "code")
	SetCodeCache(fresh)
	if err := decode(); err != nil {
		t.Fatal(err)
	}
	kept := readTree(t, fresh)
	entry := keptEntry(t, fresh)
	rel, err := filepath.Rel(fresh, entry)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]

	// The other process has kept its code and not yet sealed it.
	dir := filepath.Join(t.TempDir(), "code")
	writeTree(t, dir, kept)
	sub := filepath.Join(dir, key)
	if err := os.Remove(filepath.Join(sub, codeSealName)); err != nil {
		t.Fatal(err)
	}
	lock, err := flock.TryLock(sub + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	SetCodeCache(dir)
	done := make(chan error, 1)
	go func() { done <- decode() }()
	select {
	case err := <-done:
		lock.Unlock()
		t.Fatalf("decoded (%v) while another process held the cache's lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := sealCode(sub, nil); err != nil { // the other process finishes
		t.Fatal(err)
	}
	lock.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, _, err := CodeCache(); err != nil {
		t.Errorf("a compile in another process was reported as a problem: %v", err)
	}
	if after, err := os.Stat(filepath.Join(dir, rel)); err != nil || !os.SameFile(before, after) {
		t.Errorf("the other process's entry was removed and kept again (%v)", err)
	}
}
