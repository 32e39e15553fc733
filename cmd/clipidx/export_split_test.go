package main

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// writeShard writes the tar shard path of the images named, each a sample
// KEY.png with KEY.json and, when captions is set, KEY.txt.
func writeShard(t *testing.T, path, images string, names []string, captions bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	for i, n := range names {
		data, err := os.ReadFile(filepath.Join(images, n))
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%09d", i)
		add(key+".png", data)
		if captions {
			add(key+".txt", []byte("a picture called "+n))
		}
		add(key+".json", []byte(fmt.Sprintf(`{"key": "%s"}`, key)))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// npyShape reads the shape of an NPY file written by export.
func npyShape(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b[:min(len(b), 128)]), "'shape': (")
	shape, _, ok2 := strings.Cut(rest, ")")
	if !ok || !ok2 {
		t.Fatalf("%s: no shape in the NPY header", path)
	}
	return shape
}

// TestExportSplitBuildWithCaptions: the README's flow, build --captions
// --shard I/2 && export --partition I --partitions 2, where shard 0 has no
// .txt members and shard 1 has: without --captions the second machine is
// refused rather than shifting the text rows; with --captions on each
// export every partition has text_emb row for row with img_emb.
func TestExportSplitBuildWithCaptions(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	images := filepath.Join(model, "images")
	names, err := os.ReadDir(images)
	if err != nil {
		t.Fatal(err)
	}
	var even, odd []string
	for i, e := range names {
		if i%2 == 0 {
			even = append(even, e.Name())
		} else {
			odd = append(odd, e.Name())
		}
	}
	writeShard(t, filepath.Join(root, "00000.tar"), images, even, false)
	writeShard(t, filepath.Join(root, "00001.tar"), images, odd, true)
	pattern := filepath.Join(root, "{00000..00001}.tar")
	var dbs []string
	for i := range 2 {
		db := filepath.Join(root, fmt.Sprintf("part-%d.db", i))
		if _, errs, code := e2eRun(t, bin, "--model", model, "--device", "reference", "--db", db, "build", "--captions", "--shard", fmt.Sprintf("%d/2", i), pattern); code != 0 {
			t.Fatalf("build --shard %d/2: exit %d: %s", i, code, errs)
		}
		dbs = append(dbs, db)
	}

	emb := filepath.Join(root, "emb-auto")
	_, errs, code := e2eRun(t, bin, "--db", dbs[0], "export", "--partition", "0", "--partitions", "2", emb)
	if code != 0 || !strings.Contains(errs, "--captions") {
		t.Errorf("export of the share without captions: exit %d %q; want 0 and a note on --captions", code, errs)
	}
	before := folderTree(t, emb)
	_, errs, code = e2eRun(t, bin, "--db", dbs[1], "export", "--partition", "1", "--partitions", "2", emb)
	if code != 1 || !strings.Contains(errs, "img_emb_0.npy has no text_emb_0.npy") {
		t.Errorf("export of the share with captions beside a partition without text_emb: exit %d %q; want 1 naming img_emb_0.npy", code, errs)
	}
	if after := folderTree(t, emb); !slices.Equal(before, after) {
		t.Errorf("the refused export changed the folder: %q, was %q", after, before)
	}

	emb = filepath.Join(root, "emb")
	for i, db := range dbs {
		if _, errs, code := e2eRun(t, bin, "--db", db, "export", "--captions", "--partition", fmt.Sprint(i), "--partitions", "2", emb); code != 0 {
			t.Fatalf("export --captions --partition %d: exit %d: %s", i, code, errs)
		}
	}
	for i, n := range []int{len(even), len(odd)} {
		img := npyShape(t, filepath.Join(emb, "img_emb", fmt.Sprintf("img_emb_%d.npy", i)))
		txt := npyShape(t, filepath.Join(emb, "text_emb", fmt.Sprintf("text_emb_%d.npy", i)))
		if !strings.HasPrefix(img, fmt.Sprintf("%d, ", n)) || txt != img {
			t.Errorf("partition %d: img_emb shape (%s), text_emb (%s); want %d rows in both", i, img, txt, n)
		}
	}
}

// TestExportEmptyShare: a machine whose share of a split build holds no
// row exports an empty partition (exit 0, 0-row files), so the task of the
// README's build && export flow succeeds; outside partition mode an
// empty index is still an error.
func TestExportEmptyShare(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	images := filepath.Join(model, "images")
	writeShard(t, filepath.Join(root, "00000.tar"), images, []string{"gradient_256.png"}, true)
	db := filepath.Join(root, "part-1.db")
	// One shard, two machines: machine 1's share is empty.
	if _, errs, code := e2eRun(t, bin, "--model", model, "--device", "reference", "--db", db, "build", "--captions", "--shard", "1/2", filepath.Join(root, "00000.tar")); code != 0 {
		t.Fatalf("build --shard 1/2: exit %d: %s", code, errs)
	}
	emb := filepath.Join(root, "emb")
	_, errs, code := e2eRun(t, bin, "--db", db, "export", "--partition", "1", "--partitions", "2", emb)
	if code != 0 || !strings.Contains(errs, "partition 1 is empty") {
		t.Fatalf("export of an empty share: exit %d %q; want 0 and a note", code, errs)
	}
	want := []string{"img_emb/", "img_emb/img_emb_1.npy", "metadata/", "metadata/metadata_1.parquet"}
	if got := folderTree(t, emb); !slices.Equal(got, want) {
		t.Errorf("empty partition: %q, want %q", got, want)
	}
	if shape := npyShape(t, filepath.Join(emb, "img_emb", "img_emb_1.npy")); !strings.HasPrefix(shape, "0, ") {
		t.Errorf("img_emb_1.npy: shape (%s), want 0 rows", shape)
	}
	if _, errs, code := e2eRun(t, bin, "--db", db, "export", filepath.Join(root, "whole")); code != 1 || !strings.Contains(errs, "no indexed image") {
		t.Errorf("export of an empty index outside partition mode: exit %d %q; want 1", code, errs)
	}
}
