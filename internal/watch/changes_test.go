package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/clipidx/clipidx/store"
)

// TestWatchPassesByIndexAndOtherFiles: an index kept in the watched
// folder, and files no build reads, started a batch with each event: each
// commit raised the events of the next batch, for ever, and a catalog's
// journal written every few seconds kept the model loaded. Now their
// events are passed by; a photo's, and a folder's, still count.
func TestWatchPassesByIndexAndOtherFiles(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{}, src)
	r.db = filepath.Join(r.root, "clipidx.db")
	r.with(Options{Index: r.db})
	r.write("a/one.jpg", "IMG one")
	r.start()
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("first build within %v, want the whole roots", w)
	}
	// What a commit raises, and what other programs write beside the
	// photos.
	r.event(fsnotify.Write, r.db)
	r.event(fsnotify.Create, r.db+".lock")
	r.event(fsnotify.Chmod, r.db+".lock")
	r.event(fsnotify.Remove, r.db+".gate")
	r.event(fsnotify.Create, r.db+".merge-2k3j9")
	r.event(fsnotify.Rename, r.db+".merge-2k3j9")
	r.event(fsnotify.Write, r.write("catalog.lrcat-journal", "1"))
	r.event(fsnotify.Write, r.write("a/notes.txt", "a note"))
	r.event(fsnotify.Chmod, filepath.Join(r.root, "a", "notes.txt"))
	r.event(fsnotify.Remove, filepath.Join(r.root, "a", "download.part"))
	// Then a photo: the next batch is of it alone.
	photo := r.write("a/two.jpg", "IMG two")
	r.event(fsnotify.Create, photo)
	if w, _ := r.nextBuild(maxBatchWait); !slices.Equal(w, []string{photo}) {
		t.Errorf("a batch within %q, want only the photo's path", w)
	}
	// A folder counts, whatever its name: it may hold photos.
	r.write("b.2019/three.jpg", "IMG three")
	r.event(fsnotify.Create, filepath.Join(r.root, "b.2019"))
	if w, _ := r.nextBuild(maxBatchWait); !slices.Equal(w, []string{filepath.Join(r.root, "b.2019")}) || !r.has("b.2019/three.jpg") {
		t.Errorf("a new folder: batch within %q, photo indexed %v", w, r.has("b.2019/three.jpg"))
	}
	// Gone: a folder that was watched counts, a photo's name counts.
	if err := os.RemoveAll(filepath.Join(r.root, "b.2019")); err != nil {
		t.Fatal(err)
	}
	os.Remove(photo)
	r.event(fsnotify.Remove, filepath.Join(r.root, "b.2019"))
	r.event(fsnotify.Remove, photo)
	if w, _ := r.nextBuild(maxBatchWait); len(w) != 2 || r.has("b.2019/three.jpg") || r.has("a/two.jpg") {
		t.Errorf("a folder and a photo removed: batch within %q; still indexed %v %v", w, r.has("b.2019/three.jpg"), r.has("a/two.jpg"))
	}
}

// TestIndexFile: the index and what the store keeps beside it, by any
// path to its folder; nothing else.
func TestIndexFile(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	w := &watcher{o: Options{Index: filepath.Join(dir, "clipidx.db")}}
	for p, want := range map[string]bool{
		filepath.Join(dir, "clipidx.db"):                          true,
		filepath.Join(dir, "clipidx.db.lock"):                     true,
		filepath.Join(dir, "clipidx.db.gate"):                     true,
		filepath.Join(dir, "clipidx.db.merge-1x2y"):               true,
		filepath.Join(dir, "clipidx.db.merge-1x2y.gate"):          true,
		filepath.Join(dir, "clipidx.db.corrupt-20261203T101010Z"): true,
		filepath.Join(dir, "clipidx.db.newer-20261203T101010Z"):   true,
		filepath.Join(link, "clipidx.db.lock"):                    true,
		filepath.Join(dir, "clipidx.db.jpg"):                      false,
		filepath.Join(dir, "clipidx.dbx"):                         false,
		filepath.Join(dir, "sub", "clipidx.db"):                   false,
		filepath.Join(dir, "photo.jpg"):                           false,
	} {
		if got := w.indexFile(p); got != want {
			t.Errorf("indexFile(%s) = %v, want %v", p, got, want)
		}
	}
	if (&watcher{}).indexFile(filepath.Join(dir, "clipidx.db")) {
		t.Error("indexFile with no index named: true")
	}
}

// TestWatchChmod: a photo whose time was set (touch -d) or whose
// permissions changed raises only an attribute event (fsnotify.Chmod),
// which was passed by until the rescan: a search by the year it was
// taken found nothing. Now it is built like a change.
func TestWatchChmod(t *testing.T) {
	r := newRig(t, Options{}, newSource())
	p := r.write("a/one.jpg", "IMG one")
	r.start()
	r.nextBuild(maxBatchWait)
	old := time.Date(2015, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	r.event(fsnotify.Chmod, p)
	if w, _ := r.nextBuild(maxBatchWait); !slices.Equal(w, []string{p}) {
		t.Fatalf("after touch -d: batch within %q, want the photo", w)
	}
	if got := mtimeOf(t, r.db, p); got != old.UnixNano() {
		t.Errorf("the record's time %v, want %v", time.Unix(0, got).UTC(), old)
	}
}

// mtimeOf returns the modification time the index at db records for p.
func mtimeOf(t *testing.T, db, p string) int64 {
	t.Helper()
	rd, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var mt int64
	rd.View(func(s *store.Snapshot) error {
		return s.Files("", func(q string, f store.File) error {
			if q == p {
				mt = f.MtimeNs
			}
			return nil
		})
	})
	return mt
}

// TestWatchFolderRenamedOver: a folder renamed over a watched one (an
// atomic swap of a folder) raises only its Create, while the watcher
// still held the old folder's watch under that name: it set none, and
// the photos added there later were never seen (a rescan did not help).
// Now it is watched as the folder it is, from its event, or, when the
// event was lost, from the next rescan.
func TestWatchFolderRenamedOver(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{Rescan: time.Hour}, src)
	target := filepath.Join(r.root, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	r.write("base.jpg", "IMG base")
	r.start()
	r.nextBuild(maxBatchWait)
	r.untilBuilt()
	swap := func(name string) {
		t.Helper()
		fresh := filepath.Join(t.TempDir(), "fresh")
		if err := os.MkdirAll(fresh, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fresh, name), []byte("IMG "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(target); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(fresh, target); err != nil {
			t.Fatal(err)
		}
		if src.watchingNow(target) {
			t.Fatal("the fake source follows names, not folders")
		}
	}
	swap("one.jpg")
	r.event(fsnotify.Create, target)
	if w, _ := r.nextBuild(maxBatchWait); !slices.Equal(w, []string{target}) || !r.has("target/one.jpg") {
		t.Fatalf("the folder swapped in: batch within %q, its photo indexed %v", w, r.has("target/one.jpg"))
	}
	if !src.watchingNow(target) {
		t.Error("the folder renamed over a watched one is not watched")
	}
	// The same, its event lost: the rescan watches it.
	swap("two.jpg")
	r.untilBuilt()
	r.clock.Advance(time.Hour)
	if w, _ := r.nextBuild(maxBatchWait); w != nil {
		t.Fatalf("rescan within %q", w)
	}
	if !src.watchingNow(target) {
		t.Error("after the rescan, the folder renamed over a watched one is not watched")
	}
}

// TestWatchFolderWatchedOnceReadable: a folder whose watch failed (it
// could not be read: chmod 000) was never watched again. Now its chmod
// event, or the next rescan, sets the watch, said once.
func TestWatchFolderWatchedOnceReadable(t *testing.T) {
	for _, how := range []string{"chmod", "rescan"} {
		t.Run(how, func(t *testing.T) {
			src := newSource()
			r := newRig(t, Options{Rescan: time.Hour}, src)
			sub := filepath.Join(r.root, "sub1")
			r.write("sub1/one.jpg", "IMG one")
			src.deny[sub] = syscall.EACCES
			r.start()
			r.nextBuild(maxBatchWait)
			if src.watching(sub) {
				t.Fatal("a folder whose watch failed is watched")
			}
			if n := kindOf(r.untilBuilt(), "error"); len(n) != 1 || n[0].Path != sub {
				t.Errorf("notes %+v, want one error naming %s", n, sub)
			}
			src.allow(sub)
			if how == "chmod" {
				r.event(fsnotify.Chmod, sub)
				if w, _ := r.nextBuild(maxBatchWait); !slices.Equal(w, []string{sub}) {
					t.Errorf("after chmod: batch within %q, want the folder", w)
				}
			} else {
				r.clock.Advance(time.Hour)
				r.nextBuild(maxBatchWait)
			}
			if !src.watching(sub) {
				t.Errorf("after the %s, the folder is not watched", how)
			}
		})
	}
}

// TestWatchFailedWatchToldOnce: a folder that cannot be watched is named
// once, not at each rescan that tries again.
func TestWatchFailedWatchToldOnce(t *testing.T) {
	src := newSource()
	r := newRig(t, Options{Rescan: time.Hour}, src)
	sub := filepath.Join(r.root, "sub1")
	r.write("sub1/one.jpg", "IMG one")
	src.deny[sub] = syscall.EACCES
	r.start()
	r.nextBuild(maxBatchWait)
	notes := r.untilBuilt()
	r.clock.Advance(time.Hour)
	r.nextBuild(maxBatchWait)
	notes = append(notes, r.untilBuilt()...)
	if n := kindOf(notes, "error"); len(n) != 1 {
		t.Errorf("%d error notes over two full builds, want 1: %+v", len(n), n)
	}
}

// TestWatchRecordedWithinBounded: the last build recorded every path a
// batch built, and status --json and /api/status (polled every few
// seconds) carried them all: 3,000 photos copied, 163 KB. Past a bound
// the folders that hold them are recorded.
func TestWatchRecordedWithinBounded(t *testing.T) {
	r := newRig(t, Options{}, newSource())
	r.write("a/one.jpg", "IMG one")
	r.write("b/c/two.jpg", "IMG two")
	r.start()
	r.nextBuild(maxBatchWait)
	for i := range 200 {
		r.event(fsnotify.Create, r.write(fmt.Sprintf("a/%03d.jpg", i), fmt.Sprintf("IMG %d", i)))
	}
	r.event(fsnotify.Create, r.write("b/c/three.jpg", "IMG three"))
	if w, _ := r.nextBuild(maxBatchWait); len(w) != 201 {
		t.Fatalf("a batch of %d paths, want 201", len(w))
	}
	want := []string{filepath.Join(r.root, "a"), filepath.Join(r.root, "b", "c")}
	if got := lastWithin(t, r.db); !slices.Equal(got, want) {
		t.Errorf("last build within %d paths (%q first), want %q", len(got), got[:min(len(got), 1)], want)
	}
	// A few are recorded as they are.
	p := r.write("b/c/four.jpg", "IMG four")
	r.event(fsnotify.Create, p)
	r.nextBuild(maxBatchWait)
	if got := lastWithin(t, r.db); !slices.Equal(got, []string{p}) {
		t.Errorf("last build within %q, want %q", got, p)
	}
}

// lastWithin returns the paths the last build of the index at db records
// it was limited to.
func lastWithin(t *testing.T, db string) []string {
	t.Helper()
	rd, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var within []string
	rd.View(func(s *store.Snapshot) error {
		st, err := s.Stats()
		if err == nil && st.LastBuild != nil {
			within = st.LastBuild.Within
		}
		return err
	})
	return within
}

// untilBuilt returns the notes told until the end of the build under way
// (its "built" note, told once the watcher has taken the build's end and
// scheduled the next rescan: only then may a test advance to it).
func (r *rig) untilBuilt() []Note {
	r.t.Helper()
	var out []Note
	for {
		select {
		case n := <-r.notes:
			out = append(out, n)
			if n.Kind == "built" {
				return out
			}
		case <-time.After(turnTimeout):
			r.t.Fatal("the watcher told no end of the build")
		}
	}
}

// kindOf returns the notes of a kind.
func kindOf(notes []Note, kind string) []Note {
	var out []Note
	for _, n := range notes {
		if n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}
