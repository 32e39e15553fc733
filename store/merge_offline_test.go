package store

import (
	"path/filepath"
	"testing"
)

// offlineIndex writes an index at path holding recs (path → content)
// and listing the folders of off offline.
func offlineIndex(t *testing.T, path string, recs map[string]string, off ...Offline) {
	t.Helper()
	mergeFixture(t, path, testID, recs, 100)
	w, err := OpenWriter(path, testID, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.SetAway(off, nil); err != nil {
		t.Fatal(err)
	}
}

func offlineOf(t *testing.T, path string) map[string]Offline {
	t.Helper()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]Offline{}
	err = r.View(func(s *Snapshot) error {
		list, err := s.Offline()
		for _, o := range list {
			got[o.Dir] = o
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestMergeCountsOffline: an offline folder's entries are the records
// the merged index keeps within it, however often it is merged and
// however many inputs list it; a folder within another listed one is
// not listed apart, and the earliest Since is kept.
func TestMergeCountsOffline(t *testing.T) {
	dir := t.TempDir()
	a, a2, c := filepath.Join(dir, "a.db"), filepath.Join(dir, "a2.db"), filepath.Join(dir, "c.db")
	recs := map[string]string{"/d/A/1.jpg": "one", "/d/B/2.jpg": "two", "/d/B/x/3.jpg": "three"}
	offlineIndex(t, a, recs, Offline{Dir: "/d/B", Since: "2026-01-02T00:00:00Z", Reason: "empty mount point", Entries: 2})
	offlineIndex(t, a2, recs, Offline{Dir: "/d/B", Since: "2026-01-01T00:00:00Z", Reason: "unreadable", Entries: 2})
	// c knows one more file under /d/B, and lists /d/B/x alone offline.
	offlineIndex(t, c, map[string]string{"/d/B/4.jpg": "four", "/d/B/x/3.jpg": "three"}, Offline{Dir: "/d/B/x", Since: "2025-12-01T00:00:00Z", Entries: 1})

	all := filepath.Join(dir, "all.db")
	for i := range 3 {
		if _, err := Merge(all, []string{a}, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		if o := offlineOf(t, all)["/d/B"]; o.Entries != 2 {
			t.Errorf("merge %d of a.db into all.db: /d/B offline with %d entries, want 2", i+1, o.Entries)
		}
	}
	two := filepath.Join(dir, "two.db")
	if _, err := Merge(two, []string{a, a2}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := offlineOf(t, two); len(got) != 1 || got["/d/B"].Entries != 2 || got["/d/B"].Since != "2026-01-01T00:00:00Z" || got["/d/B"].Reason != "unreadable" {
		t.Errorf("two inputs listing /d/B: %+v, want it once with 2 entries and the earliest Since", got)
	}
	if _, err := Merge(two, []string{c}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := offlineOf(t, two); len(got) != 1 || got["/d/B"].Entries != 3 {
		t.Errorf("with /d/B/x listed by another input: %+v, want /d/B alone with 3 entries", got)
	}
}
