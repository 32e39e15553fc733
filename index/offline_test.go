package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// offlineOf reads the offline list the index holds.
func offlineOf(t *testing.T, db string) []store.Offline {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var list []store.Offline
	if err := r.View(func(s *store.Snapshot) error { list, err = s.Offline(); return err }); err != nil {
		t.Fatal(err)
	}
	return list
}

// photos writes n distinct images named PREFIXi.png into dir.
func photos(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	for i := range n {
		write(t, filepath.Join(dir, fmt.Sprintf("%s%d.png", prefix, i)), fmt.Sprintf("%s%s %d", png, prefix, i))
	}
}

// moveEntries moves every entry of dir into to (created), leaving dir empty.
func moveEntries(t *testing.T, dir, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		rename(t, filepath.Join(dir, e.Name()), filepath.Join(to, e.Name()))
	}
}

// wantOffline checks that a build kept dir offline with n entries and a
// reason that says want.
func wantOffline(t *testing.T, what string, sum *Summary, dir string, n int, want string) {
	t.Helper()
	if sum.Removed != 0 || len(sum.Offline) != 1 {
		t.Fatalf("%s: %s, offline %+v; want nothing removed and %s offline", what, sumOf(sum), sum.Offline, dir)
	}
	o := sum.Offline[0]
	if o.Dir != dir || o.Entries != n || !strings.Contains(o.Reason, want) || o.Since == "" {
		t.Errorf("%s: offline %+v, want %s with %d entries, reason %q", what, o, dir, n, want)
	}
}

// wantBack checks that a build found every kept entry unchanged, ran no
// model and cleared the offline list.
func wantBack(t *testing.T, what string, sum *Summary, enc *fakeEnc, db string, unchanged int) {
	t.Helper()
	if sum.Unchanged != unchanged || sum.Added+sum.Updated+sum.Reused+sum.Removed+sum.Failed != 0 {
		t.Errorf("%s: %s, want %d unchanged and nothing else", what, sumOf(sum), unchanged)
	}
	if n := enc.images.Load(); n != 0 {
		t.Errorf("%s: the model ran on %d images, want none", what, n)
	}
	if len(sum.Offline) != 0 || len(offlineOf(t, db)) != 0 {
		t.Errorf("%s: offline %+v, stored %+v; want none", what, sum.Offline, offlineOf(t, db))
	}
	if img, _ := verify(t, db); img != unchanged {
		t.Errorf("%s: index holds %d images, want %d", what, img, unchanged)
	}
}

// TestBuildKeepsEmptyRootOffline: a root that lists nothing (an unmounted
// share, the folder of an unplugged disk) keeps its entries offline, with
// the time it was first found away, until it lists them again: then they
// are unchanged, with no model run, and the offline list is cleared.
func TestBuildKeepsEmptyRootOffline(t *testing.T) {
	d := t.TempDir()
	nas, db := filepath.Join(d, "nas"), filepath.Join(t.TempDir(), "i.db")
	photos(t, nas, "n", 3)
	photos(t, filepath.Join(nas, "2019"), "old", 2)
	if sum, err := Build(context.Background(), db, []string{nas}, opts(&fakeEnc{})); err != nil || sum.Added != 5 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	moveEntries(t, nas, filepath.Join(d, "share")) // unmounted
	write(t, filepath.Join(nas, ".DS_Store"), "clutter")
	enc := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{nas}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "share unmounted", sum, nas, 5, "lists nothing")
	if got := offlineOf(t, db); len(got) != 1 || got[0] != sum.Offline[0] {
		t.Errorf("stored offline list %+v, want %+v", got, sum.Offline)
	}
	if n := len(dump(t, db)); n != 5 {
		t.Errorf("index holds %d records, want the 5 kept", n)
	}

	// Still away at the next build: it keeps the time it was first found.
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	long := sum.Offline[0]
	long.Since = "2020-01-02T03:04:05Z"
	if err := errors.Join(w.SetOffline([]store.Offline{long}), w.Close()); err != nil {
		t.Fatal(err)
	}
	sum, err = Build(context.Background(), db, []string{nas}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "still unmounted", sum, nas, 5, "lists nothing")
	if sum.Offline[0].Since != long.Since {
		t.Errorf("since %s, want the first time it was found away, %s", sum.Offline[0].Since, long.Since)
	}

	removeAll(t, filepath.Join(nas, ".DS_Store"))
	moveEntries(t, filepath.Join(d, "share"), nas) // mounted again
	sum, err = Build(context.Background(), db, []string{nas}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "share mounted again", sum, enc, db, 5)
}

// TestBuildKeepsUnreadableRootOffline: a root that cannot be read (here a
// link that loops, which stat refuses even to root) is listed offline
// with the reason, its entries kept, and back without a model run.
func TestBuildKeepsUnreadableRootOffline(t *testing.T) {
	d := t.TempDir()
	root, db := filepath.Join(d, "photos"), filepath.Join(t.TempDir(), "i.db")
	photos(t, root, "p", 4)
	if sum, err := Build(context.Background(), db, []string{root}, opts(&fakeEnc{})); err != nil || sum.Added != 4 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	rename(t, root, root+".away")
	symlink(t, root, root) // stat: too many levels of symbolic links
	enc := &fakeEnc{}
	var reported []string
	o := opts(enc)
	o.OnError = func(p string, err error) { reported = append(reported, p) }
	sum, err := Build(context.Background(), db, []string{root}, o)
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "root unreadable", sum, root, 4, "cannot be read")
	if len(reported) != 1 || reported[0] != root {
		t.Errorf("reported %q, want the root", reported)
	}
	removeAll(t, root)
	rename(t, root+".away", root)
	sum, err = Build(context.Background(), db, []string{root}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "root readable again", sum, enc, db, 4)
}

// TestBuildKeepsLostMountOffline: a folder that was a mount point and no
// longer is (the disk is gone, the bare folder shows through, here with a
// file written while it was unmounted) keeps its entries offline and is
// not read; one whose folder went with its disk too is kept the same way.
// Mounting is stood in for by Options.mountPoint.
func TestBuildKeepsLostMountOffline(t *testing.T) {
	d := t.TempDir()
	root, db := filepath.Join(d, "photos"), filepath.Join(t.TempDir(), "i.db")
	usb := filepath.Join(root, "usb")
	photos(t, root, "local", 1)
	photos(t, usb, "u", 3)
	mounted := true
	o := func(enc *fakeEnc) Options {
		o := opts(enc)
		o.mountPoint = func(p string) bool { return mounted && p == usb }
		return o
	}
	if sum, err := Build(context.Background(), db, []string{root}, o(&fakeEnc{})); err != nil || sum.Added != 4 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	mounted = false
	moveEntries(t, usb, filepath.Join(d, "disk"))
	write(t, filepath.Join(usb, "stray.png"), png+"written on the bare folder")
	enc := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{root}, o(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "disk gone", sum, usb, 3, "no longer a mount point")
	if sum.Added != 0 || sum.Unchanged != 1 || enc.images.Load() != 0 {
		t.Errorf("disk gone: %s, model ran %d; want the bare folder left unread", sumOf(sum), enc.images.Load())
	}

	removeAll(t, filepath.Join(usb, "stray.png"))
	moveEntries(t, filepath.Join(d, "disk"), usb)
	mounted = true
	sum, err = Build(context.Background(), db, []string{root}, o(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "disk back", sum, enc, db, 4)

	// The folder goes with its disk (as udisks removes /media/USER/DISK).
	mounted = false
	rename(t, usb, filepath.Join(d, "unplugged"))
	sum, err = Build(context.Background(), db, []string{root}, o(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "mount point gone", sum, usb, 3, "mount point no longer exists")
	rename(t, filepath.Join(d, "unplugged"), usb)
	mounted = true
	sum, err = Build(context.Background(), db, []string{root}, o(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "disk back again", sum, enc, db, 4)
}

// TestBuildKeepsMissingRegisteredRoot: a root that held entries and no
// longer exists keeps them offline instead of stopping the build; one
// that never held any is still an error, which writes nothing.
func TestBuildKeepsMissingRegisteredRoot(t *testing.T) {
	d := t.TempDir()
	usb, db := filepath.Join(d, "usb"), filepath.Join(t.TempDir(), "i.db")
	photos(t, usb, "u", 2)
	if sum, err := Build(context.Background(), db, []string{usb}, opts(&fakeEnc{})); err != nil || sum.Added != 2 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	rename(t, usb, usb+".unplugged")
	enc := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{usb}, opts(enc))
	if err != nil {
		t.Fatalf("build of a registered root that is gone: %v", err)
	}
	wantOffline(t, "disk unplugged", sum, usb, 2, "no longer exists")

	typo := filepath.Join(d, "typo")
	if _, err := Build(context.Background(), db, []string{typo}, opts(enc)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("build of a folder never indexed that does not exist: %v, want ErrNotExist", err)
	}
	fresh := filepath.Join(t.TempDir(), "new.db")
	if _, err := Build(context.Background(), fresh, []string{typo}, opts(enc)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("first build of a folder that does not exist: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a build of a mistyped folder created %s", fresh)
	}
	roots, _ := readRootsOf(t, db)
	for _, r := range roots {
		if r == typo {
			t.Errorf("the mistyped folder was registered: %q", roots)
		}
	}

	rename(t, usb+".unplugged", usb)
	sum, err = Build(context.Background(), db, []string{usb}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "disk plugged in again", sum, enc, db, 2)
}

func readRootsOf(t *testing.T, db string) ([]string, error) {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var roots []string
	err = r.View(func(s *store.Snapshot) error { roots, err = s.Roots(); return err })
	return roots, err
}

// TestBuildSweepsDeletionsInReachableFolder guards the other side of the
// rule: files deleted from a folder that is there, and a plain subfolder
// (no root, no mount point) that was emptied, are deletions.
func TestBuildSweepsDeletionsInReachableFolder(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	photos(t, d, "top", 2)
	photos(t, filepath.Join(d, "plain"), "p", 2)
	if sum, err := Build(context.Background(), db, []string{d}, opts(&fakeEnc{})); err != nil || sum.Added != 4 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	removeAll(t, filepath.Join(d, "top0.png"))
	moveEntries(t, filepath.Join(d, "plain"), filepath.Join(t.TempDir(), "trash"))
	sum, err := Build(context.Background(), db, []string{d}, opts(&fakeEnc{}))
	if err != nil || sum.Removed != 3 || sum.Unchanged != 1 || len(sum.Offline) != 0 {
		t.Errorf("after deletions: %s, offline %+v, %v; want 3 removed, none offline", sumOf(sum), sum.Offline, err)
	}
	if img, _ := verify(t, db); img != 1 {
		t.Errorf("index holds %d images, want 1", img)
	}
}

// TestMountPoint: a folder on another device than the folder holding it
// is a mount point, also when reached through a link (whose own folder is
// on the same device as the link's target's parent or not). Linux only:
// it needs /proc, a mount point on every Linux system.
func TestMountPoint(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	w := newWalker(context.Background(), nil)
	stat := func(p string) fs.FileInfo {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	d := t.TempDir()
	link := filepath.Join(d, "proc")
	symlink(t, "/proc", link)
	for _, tc := range []struct {
		path   string
		parent fs.FileInfo
		want   bool
	}{
		{"/proc", nil, true},
		{"/proc", stat("/"), true},
		{link, nil, true}, // link/.. is /, not d
		{d, nil, false},
		{d, stat(filepath.Dir(d)), false},
		{"/", nil, false},
	} {
		if got := w.mountPoint(tc.path, stat(tc.path), tc.parent); got != tc.want {
			t.Errorf("mountPoint(%s, parent given %v) = %v, want %v", tc.path, tc.parent != nil, got, tc.want)
		}
	}
}

// TestOfflineList: only paths that kept records are listed, the outermost
// of nested ones, with the records kept under each (samples of a shard
// too); a folder already offline keeps its first time, one inside a folder
// listed before does not inherit it.
func TestOfflineList(t *testing.T) {
	sorted := []string{"/a/x.png", "/a/y/z.png", "/a-b/q.png", "/m/s.tar#k1", "/m/s.tar#k2", "/n/seen.png", "/p/q/r.png"}
	away := []awayDir{{"/p/q", "lists nothing"}, {"/a/y", "cannot be read"}, {"/a", "lists nothing"},
		{"/m/s.tar", "cannot be read"}, {"/n", "lists nothing"}, {"/empty", "no longer exists"}}
	prev := []store.Offline{{Dir: "/a", Since: "then"}, {Dir: "/p", Since: "long ago"}}
	kept := func(p string) bool { return p != "/n/seen.png" }
	got := offline(away, prev, sorted, kept, "now")
	want := []store.Offline{
		{Dir: "/a", Since: "then", Reason: "lists nothing", Entries: 2},
		{Dir: "/m/s.tar", Since: "now", Reason: "cannot be read", Entries: 2},
		{Dir: "/p/q", Since: "now", Reason: "lists nothing", Entries: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("offline = %+v\nwant %+v", got, want)
	}
}

// TestBuildKeepsFolderNotEntered: a folder that lists its names but may
// not be entered (r without x, so no file in it can be looked at) keeps
// its entries offline, named once, as a folder that cannot be read; a
// file that cannot be looked at for another reason keeps its own record.
// The denial is stood in for by Options.entryInfo: tests run as root.
func TestBuildKeepsFolderNotEntered(t *testing.T) {
	d := t.TempDir()
	root, db := filepath.Join(d, "photos"), filepath.Join(t.TempDir(), "i.db")
	sub := filepath.Join(root, "locked")
	photos(t, root, "p", 2)
	photos(t, sub, "s", 3)
	if sum, err := Build(context.Background(), db, []string{root}, opts(&fakeEnc{})); err != nil || sum.Added != 5 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	enc := &fakeEnc{}
	var reported []string
	o := opts(enc)
	o.OnError = func(p string, err error) { reported = append(reported, p) }
	o.entryInfo = func(p string, e fs.DirEntry) (fs.FileInfo, error) {
		if filepath.Dir(p) == sub {
			return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrPermission}
		}
		return e.Info()
	}
	o.canEnter = func(dir string) bool { return dir != sub }
	sum, err := Build(context.Background(), db, []string{root}, o)
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "folder not entered", sum, sub, 3, "cannot be read")
	if len(reported) != 1 || reported[0] != sub {
		t.Errorf("reported %q, want the folder once", reported)
	}

	// One file that cannot be looked at in a folder that can be entered
	// (an ACL, a disk error): that file is kept, the others walked, a
	// deletion among them seen, a new file added.
	for _, denied := range []error{fs.ErrPermission, errors.New("input/output error")} {
		o.entryInfo = func(p string, e fs.DirEntry) (fs.FileInfo, error) {
			if filepath.Base(p) == "s0.png" {
				return nil, &fs.PathError{Op: "lstat", Path: p, Err: denied}
			}
			return e.Info()
		}
		o.canEnter = nil
		removeAll(t, filepath.Join(sub, "s2.png"))
		photos(t, sub, "t", 1)
		reported = nil
		if sum, err = Build(context.Background(), db, []string{root}, o); err != nil {
			t.Fatal(err)
		}
		if sum.Removed != 1 || sum.Added != 1 || len(reported) != 1 || reported[0] != filepath.Join(sub, "s0.png") {
			t.Errorf("s0 not looked at (%v): %s, reported %q; want s2 removed, t0 added and s0 named", denied, sumOf(sum), reported)
		}
		if !slices.Contains(recordPaths(t, db), filepath.Join(sub, "s0.png")) {
			t.Errorf("s0 not looked at (%v): its record lost", denied)
		}
		photos(t, sub, "s", 3) // s2 back for the next round
		removeAll(t, filepath.Join(sub, "t0.png"))
		if _, err := Build(context.Background(), db, []string{root}, opts(enc)); err != nil {
			t.Fatal(err)
		}
	}
	enc = &fakeEnc{}
	sum, err = Build(context.Background(), db, []string{root}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "folder entered again", sum, enc, db, 5)
}

// TestBuildKeepsRootNowAFile: a root folder that a file of its name has
// replaced (the folder moved aside) keeps its entries offline; a root
// that is a file of no kind a build reads, and never held any, is named
// as such.
func TestBuildKeepsRootNowAFile(t *testing.T) {
	d := t.TempDir()
	root, db := filepath.Join(d, "photos"), filepath.Join(t.TempDir(), "i.db")
	photos(t, root, "p", 3)
	if sum, err := Build(context.Background(), db, []string{root}, opts(&fakeEnc{})); err != nil || sum.Added != 3 {
		t.Fatalf("first build: %v, %v", sum, err)
	}
	rename(t, root, root+".bak")
	write(t, root, "notes")
	enc := &fakeEnc{}
	var reported []error
	o := opts(enc)
	o.OnError = func(p string, err error) { reported = append(reported, fmt.Errorf("%s: %w", p, err)) }
	sum, err := Build(context.Background(), db, []string{root}, o)
	if err != nil {
		t.Fatal(err)
	}
	wantOffline(t, "root now a file", sum, root, 3, "no longer a folder")

	notes := filepath.Join(d, "notes.txt")
	write(t, notes, "notes")
	reported = nil
	if _, err := Build(context.Background(), db, []string{notes}, o); err != nil {
		t.Fatal(err)
	}
	if len(reported) != 1 || !errors.Is(reported[0], ErrNotIndexable) {
		t.Errorf("build of %s reported %v, want %v", notes, reported, ErrNotIndexable)
	}
	// A partial build of a changed text file in a root (a watcher's)
	// reports nothing.
	inRoot := filepath.Join(d, "notes")
	photos(t, inRoot, "n", 1)
	write(t, filepath.Join(inRoot, "todo.txt"), "todo")
	reported = nil
	wo := o
	wo.Within = []string{filepath.Join(inRoot, "todo.txt")}
	if _, err := Build(context.Background(), db, []string{inRoot}, wo); err != nil || len(reported) != 0 {
		t.Errorf("partial build of a text file: %v, reported %v; want nothing", err, reported)
	}

	removeAll(t, root)
	rename(t, root+".bak", root)
	sum, err = Build(context.Background(), db, []string{root}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	wantBack(t, "folder back", sum, enc, db, 3)
}
