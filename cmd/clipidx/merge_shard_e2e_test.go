package main

import (
	"archive/tar"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// writeKeyShard writes the tar shard path with one image member per key
// (KEY.png, the fixture images in turn) and sets its mtime.
func writeKeyShard(t *testing.T, path, images string, keys []string, mtime time.Time) {
	t.Helper()
	entries, err := os.ReadDir(images)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for i, k := range keys {
		data, err := os.ReadFile(filepath.Join(images, entries[i%len(entries)].Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: k + ".png", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: mtime}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestMergeShardRewrittenEndToEnd: a tar shard built into a.db, written
// again with other keys and built into b.db, merges as its later version:
// search lists no sample of the older version that the shard no longer
// holds, and the next build finds the shard unchanged with nothing to
// remove. (The merge kept the older samples, which no build removed.)
func TestMergeShardRewrittenEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	shard := filepath.Join(root, "s.tar")
	images := filepath.Join(model, "images")
	g := []string{"--model", model, "--device", "reference"}
	run := func(db string, args ...string) string {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(append(slices.Clone(g), "--db", db), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	then := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	a, b, all := filepath.Join(root, "a.db"), filepath.Join(root, "b.db"), filepath.Join(root, "all.db")
	writeKeyShard(t, shard, images, []string{"0", "1", "2", "3"}, then)
	run(a, "build", shard)
	writeKeyShard(t, shard, images, []string{"0", "1", "4", "5"}, then.Add(time.Hour))
	run(b, "build", shard)

	out, errs, code := e2eRun(t, bin, "merge", all, a, b)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "4 records of an older version of a tar shard left out") {
		t.Errorf("merge says %q, not that it left the 4 samples of the older version out", out)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(run(all, "search", "-k", "20", "a photo")), "\n") {
		_, p, _ := strings.Cut(l, "\t")
		got[strings.TrimPrefix(p, shard+"#")] = true
	}
	want := map[string]bool{"0": true, "1": true, "4": true, "5": true}
	if !maps.Equal(got, want) {
		t.Errorf("search after the merge lists the samples %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if out := run(all, "build", shard); !strings.HasPrefix(out, "added 0, updated 0, unchanged 4, reused 0, removed 0, failed 0") {
		t.Errorf("build after the merge: %q, want the 4 samples unchanged", out)
	}
}

// TestMergeRefusalEndToEnd: merge refusals name the input and OUT, say
// what differs and give advice a merge can follow: no flag merge lacks,
// no --reindex of OUT, no advice meant for --db.
func TestMergeRefusalEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root, photos, out, g := builtPhotos(t, bin, model)
	noEXIF := filepath.Join(root, "noexif.db")
	gNo := slices.Clone(g)
	gNo[1] = noEXIF
	if _, errs, code := e2eRun(t, bin, append(gNo, "build", "--exif=false", photos)...); code != 0 {
		t.Fatalf("build --exif=false: %d %s", code, errs)
	}
	faiss := filepath.Join(root, "image.index")
	if err := os.WriteFile(faiss, append([]byte("IxFI"), make([]byte, 8192)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{out, noEXIF}, []string{noEXIF, out, "EXIF orientation", "new file", "clipidx --db " + noEXIF + " build --reindex --exif=true"},
			[]string{"pass --exif", "--db " + out}},
		{[]string{filepath.Join(root, "new.db"), out, faiss}, []string{faiss, "not a clipidx index", "leave it out"},
			[]string{"--reindex", "give --db"}},
	} {
		_, errs, code := e2eRun(t, bin, append([]string{"merge"}, c.args...)...)
		if code != 1 {
			t.Errorf("merge %v: exit %d, want 1: %s", c.args, code, errs)
		}
		for _, s := range c.want {
			if !strings.Contains(errs, s) {
				t.Errorf("merge %v: %q does not say %q", c.args, errs, s)
			}
		}
		for _, s := range c.notWant {
			if strings.Contains(errs, s) {
				t.Errorf("merge %v: %q says %q", c.args, errs, s)
			}
		}
	}
}
