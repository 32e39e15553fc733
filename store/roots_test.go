package store

import (
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func readRoots(t *testing.T, path string) ([]string, []Offline) {
	t.Helper()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var roots []string
	var off []Offline
	err = r.View(func(s *Snapshot) error {
		var err error
		if roots, err = s.Roots(); err != nil {
			return err
		}
		off, err = s.Offline()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return roots, off
}

// TestRootsRegistry: the folders of every build stay recorded (an index
// without the registry answers its last build's roots), a merge keeps the
// union of its inputs' folders and offline lists, and forget drops what it
// forgot.
func TestRootsRegistry(t *testing.T) {
	dir := t.TempDir()
	id := Identity{Model: "m", Dim: 4, Preprocess: "p"}
	a := filepath.Join(dir, "a.db")
	// The three entries /nas holds while it is offline are in a.db.
	mergeFixture(t, a, id, map[string]string{"/photos/x.jpg": "x", "/nas/1.jpg": "n1", "/nas/2.jpg": "n2", "/nas/3.jpg": "n3"}, 1)
	// Written as before the registry: only LastBuild names the folder.
	if roots, _ := readRoots(t, a); !slices.Equal(roots, []string{dir}) {
		t.Fatalf("roots of an index without the registry = %q, want the last build's %q", roots, dir)
	}
	w, err := OpenWriter(a, id, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range [][]string{{"/photos"}, {"/photos/2024", "/nas"}, {"/photos"}} {
		if err := w.AddRoots(add); err != nil {
			t.Fatal(err)
		}
	}
	off := []Offline{{Dir: "/nas", Since: "2026-01-01T00:00:00Z", Reason: "lists nothing", Entries: 3}}
	if err := w.SetOffline(off); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(LastBuild{Roots: []string{"/photos/2024"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := []string{dir, "/nas", "/photos", "/photos/2024"}
	slices.Sort(want)
	if roots, got := readRoots(t, a); !slices.Equal(roots, want) || !slices.Equal(got, off) {
		t.Fatalf("after three builds: roots %q offline %+v, want %q and %+v", roots, got, want, off)
	}

	b := filepath.Join(dir, "b.db")
	mergeFixture(t, b, id, map[string]string{"/other/y.jpg": "y"}, 1)
	out := filepath.Join(dir, "out.db")
	mergeFixture(t, out, id, map[string]string{"/mine/z.jpg": "z"}, 1)
	if _, err := Merge(out, []string{a, b}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	roots, got := readRoots(t, out)
	if !slices.Equal(roots, want) || !slices.Equal(got, off) {
		t.Fatalf("merged: roots %q offline %+v, want %q (the union) and %+v", roots, got, want, off)
	}
	if o, ok := OfflineFor(got, "/nas/2019/a.jpg"); !ok || o.Dir != "/nas" {
		t.Fatalf("OfflineFor(/nas/2019/a.jpg) = %+v, %v", o, ok)
	}
	if _, ok := OfflineFor(got, "/nasty/a.jpg"); ok {
		t.Fatal("OfflineFor matched a sibling folder with the same prefix")
	}

	if _, err := Forget(out, []string{"/nas", "/photos/2024"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	roots, got = readRoots(t, out)
	if want := []string{"/photos", dir}; !slices.Equal(roots, want) || len(got) != 0 {
		t.Fatalf("after forget: roots %q offline %+v, want %q and none", roots, got, want)
	}
}

func mountsOf(t *testing.T, path string) []string {
	t.Helper()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ms []string
	if err := r.View(func(s *Snapshot) error { ms, err = s.Mounts(); return err }); err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestMountsRecord: the mount points a build found are kept sorted and
// once each, written with the offline list in one commit, joined by a
// merge and dropped by forget with the folders they are in.
func TestMountsRecord(t *testing.T) {
	dir := t.TempDir()
	id := Identity{Model: "m", Dim: 4, Preprocess: "p"}
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	mergeFixture(t, a, id, map[string]string{"/photos/x.jpg": "x"}, 1)
	mergeFixture(t, b, id, map[string]string{"/other/y.jpg": "y"}, 1)
	if ms := mountsOf(t, a); ms != nil {
		t.Fatalf("an index without the key answers %q", ms)
	}
	off := []Offline{{Dir: "/nas", Since: "2026-01-01T00:00:00Z", Reason: "lists nothing", Entries: 3}}
	for path, ms := range map[string][]string{a: {"/nas", "/photos/usb", "/nas"}, b: {"/other/disk"}} {
		w, err := OpenWriter(path, id, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.SetAway(off, ms); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	if ms, want := mountsOf(t, a), []string{"/nas", "/photos/usb"}; !slices.Equal(ms, want) {
		t.Fatalf("mounts %q, want %q", ms, want)
	}
	if _, o := readRoots(t, a); !slices.Equal(o, off) {
		t.Fatalf("offline %+v, want %+v", o, off)
	}
	if _, err := Merge(a, []string{b}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if ms, want := mountsOf(t, a), []string{"/nas", "/other/disk", "/photos/usb"}; !slices.Equal(ms, want) {
		t.Fatalf("merged mounts %q, want %q", ms, want)
	}
	if _, err := Forget(a, []string{"/photos"}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if ms, want := mountsOf(t, a), []string{"/nas", "/other/disk"}; !slices.Equal(ms, want) {
		t.Fatalf("mounts after forget /photos %q, want %q", ms, want)
	}
}

// TestNonUTF8Paths: folders whose names are not UTF-8 (Latin-1 on Linux)
// come back byte for byte from the roots, the mount points, the offline
// list and the last build, through a merge; a root an older clipidx
// recorded in its lossy form (U+FFFD for each bad byte) is replaced by the
// whole one when a build adds it again.
func TestNonUTF8Paths(t *testing.T) {
	dir := t.TempDir()
	id := Identity{Model: "m", Dim: 4, Preprocess: "p"}
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	fred, cafe, nas := "/photos/Fr\xe9d", "/other/caf\xe9", "/n\xe4s"
	mergeFixture(t, a, id, map[string]string{fred + "/x.jpg": "x"}, 1)
	mergeFixture(t, b, id, map[string]string{cafe + "/y.jpg": "y"}, 1)
	w, err := OpenWriter(b, id, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddRoots([]string{cafe}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if w, err = OpenWriter(a, id, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	// An older clipidx wrote the lossy form of fred.
	err = w.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).Put(kRoots, []byte(`["/photos/Fr\ufffdd","/plain"]`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddRoots([]string{fred}); err != nil {
		t.Fatal(err)
	}
	off := []Offline{{Dir: nas, Since: "2026-01-01T00:00:00Z", Reason: "lists nothing", Entries: 3}}
	if err := w.SetAway(off, []string{nas}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(LastBuild{Roots: []string{fred}, Within: []string{fred + "/x.jpg"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	roots, o := readRoots(t, a)
	if want := []string{fred, "/plain"}; !slices.Equal(roots, want) {
		t.Errorf("roots %q, want %q", roots, want)
	}
	if !slices.Equal(o, off) {
		t.Errorf("offline %+v, want %+v", o, off)
	}
	if ms := mountsOf(t, a); !slices.Equal(ms, []string{nas}) {
		t.Errorf("mounts %q, want %q", ms, nas)
	}
	r, err := OpenReader(a, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.View(func(s *Snapshot) error {
		st, err := s.Stats()
		if err == nil && (!slices.Equal(st.LastBuild.Roots, []string{fred}) || !slices.Equal(st.LastBuild.Within, []string{fred + "/x.jpg"})) {
			t.Errorf("last build roots %q within %q", st.LastBuild.Roots, st.LastBuild.Within)
		}
		return err
	})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(a, []string{b}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if roots, _ := readRoots(t, a); !slices.Contains(roots, cafe) || !slices.Contains(roots, fred) {
		t.Errorf("merged roots %q, want %q and %q among them", roots, cafe, fred)
	}
	if _, err := Forget(a, []string{fred}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if roots, _ := readRoots(t, a); slices.Contains(roots, fred) {
		t.Errorf("roots after forget %q still hold it", roots)
	}
}
