package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rewrite runs fn in a write transaction of the bbolt file at path.
func rewrite(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Update(fn), db.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestNewerSchema: an index a newer clipidx wrote was met by "rebuild with
// clipidx build --reindex", and --reindex then wiped it in place, with no
// copy: hours of model work lost to an old binary left in a service. Now
// every command says a newer clipidx wrote it and to upgrade, and
// --reindex keeps it whole beside the new index as .newer-TIME.
func TestNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Hash: hashOf("a")}, vec(1, 8))
	commit(t, w, &b)
	closeW(t, w)
	rewrite(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put(kSchema, []byte{0, 0, 0, SchemaVersion + 1}) })
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(path, ReaderOptions{}); !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "upgrade clipidx") {
		t.Errorf("OpenReader: %v, want ErrNewerSchema saying to upgrade", err)
	}
	if _, err := OpenWriter(path, Identity{Model: "m", Dim: 8}, WriterOptions{NoSync: true}); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("OpenWriter: %v, want ErrNewerSchema", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("OpenWriter without Reindex changed the newer index")
	}
	w, err = OpenWriter(path, Identity{Model: "m", Dim: 8}, WriterOptions{NoSync: true, Reindex: true})
	if err != nil {
		t.Fatalf("OpenWriter with Reindex: %v", err)
	}
	backup := w.Backup()
	closeW(t, w)
	if !strings.HasPrefix(backup, path+".newer-") {
		t.Fatalf("Backup() = %q, want %s.newer-TIME", backup, path)
	}
	if kept, _ := os.ReadFile(backup); !bytes.Equal(kept, orig) {
		t.Error("the newer index was not kept whole")
	}
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatalf("the new index: %v", err)
	}
	defer r.Close()
	r.View(func(s *Snapshot) error {
		if st, _ := s.Stats(); st.Images != 0 {
			t.Errorf("the new index holds %d images, want 0", st.Images)
		}
		return nil
	})
}

// TestForeignBoltFile: a bbolt file of another program given as the index
// got clipidx's buckets written into it. Now it is refused, untouched, and
// --reindex moves it aside.
func TestForeignBoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	rewrite(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("users"))
		if err != nil {
			return err
		}
		return b.Put([]byte("alice"), []byte("1"))
	})
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWriter(path, Identity{Model: "m", Dim: 8}, WriterOptions{NoSync: true}); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `"users"`) {
		t.Errorf("OpenWriter: %v, want ErrSchema naming the file's buckets", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("OpenWriter wrote into another program's file")
	}
	// --reindex neither moves nor writes it: the --db named the wrong file.
	if _, err := OpenWriter(path, Identity{Model: "m", Dim: 8}, WriterOptions{NoSync: true, Reindex: true}); !errors.Is(err, ErrNotIndex) {
		t.Errorf("OpenWriter with Reindex: %v, want ErrNotIndex", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("OpenWriter with Reindex wrote into another program's file")
	}
	if _, err := OpenReader(path, ReaderOptions{}); !errors.Is(err, ErrNotIndex) || !strings.Contains(err.Error(), `"users"`) {
		t.Errorf("OpenReader: %v, want ErrNotIndex naming the file's buckets", err)
	}
}

// TestNotABoltFile: a --db naming a file that is no bbolt file at all (a
// text file, a photo) is no index: readers and writers refuse it,
// --reindex included, and leave it as it was, with no advice to reindex.
// An index damaged from its first byte (zeroed, or cut inside its first
// page header) is still a damaged index (TestReindexRecoversDamagedIndex).
func TestNotABoltFile(t *testing.T) {
	for name, data := range map[string][]byte{
		"text":  []byte("my notes about the photos\n"),
		"png":   append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 5000)...),
		"short": []byte("ab"),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenReader(path, ReaderOptions{})
			if !errors.Is(err, ErrNotIndex) || errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "--reindex") || !strings.Contains(err.Error(), "not a bbolt file") {
				t.Errorf("OpenReader: %v, want ErrNotIndex saying it is no bbolt file, with no --reindex advice", err)
			}
			for _, reindex := range []bool{false, true} {
				if w, err := OpenWriter(path, testID, WriterOptions{NoSync: true, Reindex: reindex}); !errors.Is(err, ErrNotIndex) {
					if err == nil {
						closeW(t, w)
					}
					t.Errorf("OpenWriter (reindex %v): %v, want ErrNotIndex", reindex, err)
				}
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
				t.Error("the file was written")
			}
			if m, _ := filepath.Glob(path + ".*"); len(m) > 0 {
				for _, f := range m {
					if !strings.HasSuffix(f, ".lock") && !strings.HasSuffix(f, ".gate") {
						t.Errorf("left beside it: %s", f)
					}
				}
			}
		})
	}
}

// TestIndexLinkDangling: an index path that is a link to a disk not
// mounted now said "no index yet: run clipidx build", and a build made a
// new, empty index where the link led (then embedded every photo again).
// Now both name the link and create nothing.
func TestIndexLinkDangling(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "usb", "index.db")
	path := filepath.Join(dir, "index.db")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil { // the bare mount point
		t.Fatal(err)
	}
	if _, err := OpenReader(path, ReaderOptions{}); err == nil || errors.Is(err, ErrNoIndex) || !strings.Contains(err.Error(), "link to "+target) {
		t.Errorf("OpenReader: %v, want the link named", err)
	}
	if w, err := OpenWriter(path, testID, WriterOptions{NoSync: true}); err == nil || !strings.Contains(err.Error(), "link to "+target) {
		t.Errorf("OpenWriter: %v, want the link named", err)
		if w != nil {
			w.Close()
		}
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an index was created where the link leads: %v", err)
	}
}
