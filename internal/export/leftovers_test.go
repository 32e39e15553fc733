package export

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// synthetic writes an index of rows random vectors of dimension 8.
func synthetic(t *testing.T, rows int) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "ix.db")
	if err := WriteSynthetic(db, rows, 8, 1); err != nil {
		t.Fatal(err)
	}
	return db
}

// tree lists what is under root, relative to it, folders ending in "/".
func tree(t *testing.T, root string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// plant creates files (and, for names ending in "/", folders) under root.
func plant(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// exportCR runs ClipRetrieval on the index db.
func exportCR(t *testing.T, ctx context.Context, db, out string, o Options) (*Result, error) {
	t.Helper()
	var res *Result
	var err error
	view(t, db, func(s *store.Snapshot) error {
		res, err = ClipRetrieval(ctx, s, out, o)
		return nil
	})
	return res, err
}

// TestFailedExportLeavesFolderAsItWas: an export of four partitions of
// 300 rows that fails writing partition 3 (a full disk) or is stopped
// after partition 2 removes partitions 0-2 and the folders it made, so the
// output is as it was (missing, under a missing parent, or an empty
// folder such as a mount point); the same export then succeeds.
func TestFailedExportLeavesFolderAsItWas(t *testing.T) {
	db := synthetic(t, 1200)
	diskFull := errors.New("injected: no space left on device")
	failures := []struct {
		name string
		run  func(t *testing.T, out string) (*Result, error)
		want error
	}{
		{"disk full at partition 3", func(t *testing.T, out string) (*Result, error) {
			defer func(f func(*os.File, []byte) (int, error)) { writeFile = f }(writeFile)
			writeFile = func(f *os.File, p []byte) (int, error) {
				if strings.Contains(filepath.Base(f.Name()), "_3.") {
					return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: errors.Join(diskFull, syscall.ENOSPC)}
				}
				return f.Write(p)
			}
			return exportCR(t, context.Background(), db, out, Options{RowsPerPartition: 300, NoSync: true})
		}, diskFull},
		{"stopped after partition 2", func(t *testing.T, out string) (*Result, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return exportCR(t, ctx, db, out, Options{RowsPerPartition: 300, NoSync: true, Progress: func(rows int) {
				if rows >= 900 {
					cancel()
				}
			}})
		}, context.Canceled},
	}
	outs := []struct {
		name  string
		setup func(t *testing.T, root string) string
	}{
		{"new folder", func(t *testing.T, root string) string { return filepath.Join(root, "emb") }},
		{"new parent", func(t *testing.T, root string) string { return filepath.Join(root, "a", "b", "emb") }},
		{"empty folder", func(t *testing.T, root string) string {
			plant(t, root, "emb/")
			return filepath.Join(root, "emb")
		}},
	}
	for _, f := range failures {
		for _, o := range outs {
			t.Run(f.name+"/"+o.name, func(t *testing.T) {
				root := t.TempDir()
				out := o.setup(t, root)
				before := tree(t, root)
				res, err := f.run(t, out)
				if !errors.Is(err, f.want) {
					t.Fatalf("export: %v, want %v", err, f.want)
				}
				if after := tree(t, root); !slices.Equal(before, after) {
					t.Errorf("after the failed export the folder holds %q, want %q as before", after, before)
				}
				if res == nil || len(res.Files) != 0 || !slices.Contains(res.Removed, filepath.Join(out, "img_emb", "img_emb_2.npy")) ||
					!slices.Contains(res.Removed, filepath.Join(out, "metadata", "metadata_0.parquet")) {
					t.Errorf("result %+v, want the files of partitions 0-2 in Removed", res)
				}
				res, err = exportCR(t, context.Background(), db, out, Options{RowsPerPartition: 300, NoSync: true})
				if err != nil || res.Partitions != 4 || len(res.Leftovers) != 0 {
					t.Fatalf("the same export again: %+v, %v; want 4 partitions", res, err)
				}
			})
		}
	}
}

// TestKilledExportLeftoversDoNotBlock: the temporary files and empty
// folders of a killed export are not a user's files: the next export
// removes them, lists them, and writes. Anything else, a complete
// partition of an earlier export above all, is refused and left as is.
func TestKilledExportLeftoversDoNotBlock(t *testing.T) {
	db := synthetic(t, 50)
	for _, c := range []struct {
		name  string
		plant []string
		other string // the entry named when refused; "" = accepted
	}{
		{"temporary files and empty folders", []string{"img_emb/.img_emb_0.npy.tmp-3k9xq2", "metadata/.metadata_0.parquet.tmp-zz01", "text_emb/"}, ""},
		{"empty folders", []string{"img_emb/", "metadata/"}, ""},
		{"a complete partition", []string{"img_emb/img_emb_0.npy", "img_emb/.img_emb_1.npy.tmp-abc", "metadata/"}, "img_emb/img_emb_0.npy"},
		{"a user's file", []string{"img_emb/", "notes.txt"}, "notes.txt"},
		{"a folder inside", []string{"img_emb/old/"}, "img_emb/old"},
		{"a temporary name in another folder", []string{"metadata/.img_emb_0.npy.tmp-a1"}, "metadata/.img_emb_0.npy.tmp-a1"},
		{"a temporary name on a folder", []string{"img_emb/.img_emb_0.npy.tmp-a1/"}, "img_emb/.img_emb_0.npy.tmp-a1"},
		{"another name", []string{"img_emb/.img_emb_0.npy.tmp-a1.bak"}, "img_emb/.img_emb_0.npy.tmp-a1.bak"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "emb")
			plant(t, out, c.plant...)
			before := tree(t, out)
			res, err := exportCR(t, context.Background(), db, out, Options{NoSync: true})
			if c.other != "" {
				if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), c.other) {
					t.Errorf("export: %v, want ErrNotEmpty naming %s", err, c.other)
				}
				if after := tree(t, out); !slices.Equal(before, after) {
					t.Errorf("a refused export changed the folder: %q, was %q", after, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("export over leftovers: %v", err)
			}
			want := []string{"img_emb/", "img_emb/img_emb_0.npy", "metadata/", "metadata/metadata_0.parquet"}
			if got := tree(t, out); !slices.Equal(got, want) {
				t.Errorf("folder holds %q, want %q", got, want)
			}
			for _, p := range c.plant {
				if !slices.Contains(res.Leftovers, filepath.Join(out, p)) {
					t.Errorf("Leftovers %q do not list %s", res.Leftovers, p)
				}
			}
		})
	}
	// In partition mode a temporary file may be another machine's
	// partition being written: it is neither counted nor removed.
	out := filepath.Join(t.TempDir(), "emb")
	plant(t, out, "img_emb/.img_emb_1.npy.tmp-abc")
	if _, err := exportCR(t, context.Background(), db, out, Options{Partition: 0, Partitions: 2, NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "img_emb", ".img_emb_1.npy.tmp-abc")); err != nil {
		t.Errorf("partition mode removed another machine's file: %v", err)
	}
}

// TestFailedPartitionKeepsNothing: a partition whose folder cannot be
// synced once its files are linked is removed: all of it or nothing.
func TestFailedPartitionKeepsNothing(t *testing.T) {
	db := synthetic(t, 50)
	defer func(f func(string) error) { syncDir = f }(syncDir)
	bad := errors.New("injected: sync failed")
	syncDir = func(string) error { return bad }
	out := filepath.Join(t.TempDir(), "emb")
	if _, err := exportCR(t, context.Background(), db, out, Options{}); !errors.Is(err, bad) {
		t.Fatalf("export: %v, want the sync error", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is left: %q", out, tree(t, out))
	}
}

// TestFaissFlatLeftoversAndStop: FaissFlat removes the temporary files a
// killed FaissFlat left beside its output, and a stopped or failed one
// leaves no file.
func TestFaissFlatLeftoversAndStop(t *testing.T) {
	db := synthetic(t, 50)
	dir := t.TempDir()
	out := filepath.Join(dir, "knn.index")
	plant(t, dir, ".knn.index.tmp-1x2y", ".knn.index.paths.tmp-9z", ".other.index.tmp-1x2y")
	faiss := func(ctx context.Context) (*Result, error) {
		var res *Result
		var err error
		view(t, db, func(s *store.Snapshot) error {
			res, err = FaissFlat(ctx, s, out, Options{NoSync: true})
			return nil
		})
		return res, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := faiss(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: %v, want context.Canceled", err)
	}
	if got, want := tree(t, dir), []string{".other.index.tmp-1x2y"}; !slices.Equal(got, want) {
		t.Errorf("after a stopped export the folder holds %q, want %q", got, want)
	}
	plant(t, dir, ".knn.index.tmp-1x2y")
	res, err := faiss(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, ".knn.index.tmp-1x2y")}; !slices.Equal(res.Leftovers, want) {
		t.Errorf("Leftovers %q, want %q", res.Leftovers, want)
	}
	if got, want := tree(t, dir), []string{".other.index.tmp-1x2y", "knn.index", "knn.index.paths"}; !slices.Equal(got, want) {
		t.Errorf("folder holds %q, want %q", got, want)
	}
}
