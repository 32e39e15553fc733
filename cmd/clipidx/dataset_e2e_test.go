package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/store"
)

// writeShards writes img2dataset-shaped shards of the fixture's images:
// KEY.jpg (the image bytes, whatever their format), KEY.txt, KEY.json;
// shard 1 holds a corrupt image member.
func writeShards(t *testing.T, images, dir string, shards int) {
	t.Helper()
	entries, err := os.ReadDir(images)
	if err != nil {
		t.Fatal(err)
	}
	for s := range shards {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%05d.tar", s)))
		if err != nil {
			t.Fatal(err)
		}
		tw := tar.NewWriter(f)
		add := func(name string, data []byte) {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			tw.Write(data)
		}
		for i, e := range entries {
			if i%shards != s {
				continue
			}
			key := fmt.Sprintf("%05d%04d", s, i)
			data, err := os.ReadFile(filepath.Join(images, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			add(key+".jpg", data)
			add(key+".txt", []byte("a picture called "+e.Name()))
			add(key+".json", []byte(fmt.Sprintf(`{"url": "http://example.com/%s", "key": "%s", "status": "success"}`, e.Name(), key)))
		}
		if s == 1 {
			add("000019999.jpg", []byte("\xff\xd8\xff\xe0 not really a JPEG"))
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

func readIndex(t *testing.T, db string) map[string][]float32 {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string][]float32{}
	r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error {
			v := s.Vector(f.Vec)
			if smp, ok, _ := s.Sample(p); ok {
				v = append(v, smp.Text...) // the caption vector must match too
			}
			out[p] = v
			return nil
		})
	})
	return out
}

// TestDatasetEndToEnd: webdataset shards in, split build with --shard,
// merge, export for clip-retrieval and FAISS, with the tiny fixture model.
func TestDatasetEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	shards := filepath.Join(root, "shards")
	os.MkdirAll(shards, 0o755)
	writeShards(t, filepath.Join(model, "images"), shards, 3)
	pattern := filepath.Join(shards, "{00000..00002}.tar")
	g := []string{"--model", model, "--device", "reference"}
	run := func(db string, args ...string) (string, string, int) {
		t.Helper()
		return e2eRun(t, bin, append(append(slices.Clone(g), "--db", db), args...)...)
	}

	one := filepath.Join(root, "one.db")
	out, errs, code := run(one, "build", "--json", "--captions", pattern)
	var b buildJSON
	json.Unmarshal([]byte(out), &b)
	if code != 0 || b.Added != 7 || b.Failed != 1 || !strings.HasSuffix(b.Failures[0].Path, "00001.tar#000019999") {
		t.Fatalf("build of the shards: exit %d, %+v\n%s", code, b, errs)
	}
	var parts []string
	for i := range 3 {
		db := filepath.Join(root, fmt.Sprintf("part%d.db", i))
		if _, errs, code := run(db, "build", "--captions", "--shard", fmt.Sprintf("%d/3", i), pattern); code > 1 {
			t.Fatalf("build --shard %d/3: exit %d: %s", i, code, errs)
		}
		parts = append(parts, db)
	}
	merged := filepath.Join(root, "merged.db")
	if _, errs, code := e2eRun(t, bin, append([]string{"merge", merged}, parts...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	a, m := readIndex(t, one), readIndex(t, merged)
	if len(a) != 8 || len(a) != len(m) {
		t.Errorf("single build %d records, merged %d; want 8", len(a), len(m))
	}
	for p, v := range a {
		if !slices.Equal(v, m[p]) {
			t.Errorf("%s: merged record differs from the single build's", p)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"build", "--shard", "3/3", pattern}, 2, "must be in [0, 3)"},
		{[]string{"build", "--shard", "0/0", pattern}, 2, "at least 1"},
		{[]string{"build", filepath.Join(shards, "{00000..00002.tar")}, 2, "without '}'"},
	} {
		if _, errs, code := run(filepath.Join(root, "bad.db"), c.args...); code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d %q; want %d mentioning %q", c.args, code, errs, c.code, c.msg)
		}
	}

	// Export: a clip-retrieval folder, and a second machine's partition
	// into it.
	emb := filepath.Join(root, "emb")
	out, errs, code = run(merged, "export", "--json", "--format", "clip-retrieval", "--partition", "0", "--partitions", "2", emb)
	var res struct {
		Rows     int
		TextRows int `json:"text_rows"`
		Files    []string
	}
	json.Unmarshal([]byte(out), &res)
	if code != 0 || len(res.Files) != 3 || res.Rows != 7 || res.TextRows != 7 {
		t.Fatalf("export: exit %d %s %s", code, out, errs)
	}
	if _, errs, code := run(merged, "export", "--partition", "0", "--partitions", "2", emb); code != 1 || !strings.Contains(errs, "never overwrites") {
		t.Errorf("export over an existing partition: exit %d %q", code, errs)
	}
	if _, errs, code := run(merged, "export", "--partition", "1", "--partitions", "2", emb); code != 0 {
		t.Errorf("second partition: exit %d %q", code, errs)
	}
	if _, errs, code := run(merged, "export", emb); code != 1 || !strings.Contains(errs, "not empty") {
		t.Errorf("export into a non-empty folder: exit %d %q", code, errs)
	}
	for _, f := range []string{"img_emb/img_emb_0.npy", "img_emb/img_emb_1.npy", "text_emb/text_emb_1.npy", "metadata/metadata_1.parquet"} {
		if _, err := os.Stat(filepath.Join(emb, f)); err != nil {
			t.Error(err)
		}
	}

	// FAISS: python3-faiss's top 10 for a text query equal clipidx search's.
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import faiss, numpy").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-faiss is required under CI=true (apt-get install python3-faiss python3-numpy)")
		}
		t.Skip("python3-faiss not available (apt-get install python3-faiss python3-numpy); skipping the FAISS read-back")
	}
	ix := filepath.Join(root, "knn.index")
	if _, errs, code := run(merged, "export", "--format", "faiss-flat", ix); code != 0 {
		t.Fatalf("export faiss-flat: %d %s", code, errs)
	}
	q := filepath.Join(root, "q.f32")
	if _, errs, code := run(merged, "embed", "--text", "a photo of a cat", "-o", q); code != 0 {
		t.Fatalf("embed: %d %s", code, errs)
	}
	out, errs, code = run(merged, "search", "--json", "-k", "10", "a photo of a cat")
	var want []struct {
		Path  string
		Score float32
	}
	if err := json.Unmarshal([]byte(out), &want); code != 0 || err != nil {
		t.Fatalf("search: %d %v %s", code, err, errs)
	}
	pyOut, err := exec.Command(py, "-c", `import sys, json, numpy as np, faiss
ix = faiss.read_index(sys.argv[1])
paths = open(sys.argv[1] + ".paths").read().splitlines()
q = np.fromfile(sys.argv[2], dtype="<f4").reshape(1, ix.d)
faiss.normalize_L2(q)
D, I = ix.search(q, 10)
print(json.dumps([{"Path": paths[i], "Score": float(d)} for d, i in zip(D[0], I[0]) if i >= 0]))`, ix, q).CombinedOutput()
	if err != nil {
		t.Fatalf("faiss: %v\n%s", err, pyOut)
	}
	var got []struct {
		Path  string
		Score float32
	}
	if err := json.Unmarshal(pyOut, &got); err != nil {
		t.Fatalf("faiss output %s: %v", pyOut, err)
	}
	if len(got) != len(want) {
		t.Fatalf("faiss found %d, clipidx search %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Path != want[i].Path || math.Abs(float64(got[i].Score-want[i].Score)) > 1e-4 {
			t.Errorf("rank %d: faiss %s %.5f, clipidx %s %.5f", i, got[i].Path, got[i].Score, want[i].Path, want[i].Score)
		}
	}
}
