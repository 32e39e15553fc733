package store

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// mergeFixture writes an index at path holding the given records: name →
// content (a failure when content is "").
func mergeFixture(t *testing.T, path string, id Identity, recs map[string]string, mtime int64) {
	t.Helper()
	w, err := OpenWriter(path, id, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b Batch
	for p, c := range recs {
		if c == "" {
			b.Put(p, File{Size: 1, MtimeNs: mtime, Err: "decode: broken"}, nil)
			continue
		}
		h := hashOf(c)
		b.Put(p, File{Size: int64(len(c)), MtimeNs: mtime, Hash: h}, vec(uint64(h[0])<<8|uint64(h[1]), id.Dim))
		b.PutSample(p, Sample{Caption: "caption of " + c, JSON: []byte(`{"url":"u` + c + `"}`), Text: vec(uint64(h[2]), id.Dim)})
	}
	b.PutShard("/d/00000.tar", ShardStat{Size: 10, MtimeNs: mtime})
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(LastBuild{Roots: []string{filepath.Dir(path)}, Complete: true}); err != nil {
		t.Fatal(err)
	}
}

type mergedRec struct {
	file   File
	vec    []float32
	sample Sample
}

func readAll(t *testing.T, path string) map[string]mergedRec {
	t.Helper()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]mergedRec{}
	err = r.View(func(s *Snapshot) error {
		if err := s.Check(false); err != nil {
			t.Errorf("check %s: %v", path, err)
		}
		return s.Files("", func(p string, f File) error {
			smp, _, err := s.Sample(p)
			out[p] = mergedRec{file: f, vec: s.Vector(f.Vec), sample: smp}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")
	mergeFixture(t, a, testID, map[string]string{"/d/1.jpg": "one", "/d/2.jpg": "two", "/d/bad.jpg": ""}, 100)
	// b shares content "two" under another path, and holds /d/bad.jpg
	// indexed (it wins over a's failure) and /d/1.jpg older (a's wins).
	mergeFixture(t, b, testID, map[string]string{"/d/3.jpg": "two", "/d/bad.jpg": "fixed", "/d/4.jpg": "four"}, 200)
	mergeFixture(t, c, testID, map[string]string{"/d/1.jpg": "older"}, 50)

	out := filepath.Join(dir, "out.db")
	sum, err := Merge(out, []string{a, b, c}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 7 || sum.Duplicates != 2 || sum.Vectors != 4 {
		t.Errorf("summary %+v, want 7 files, 2 duplicates, 4 vectors (one, two, fixed, four)", sum)
	}
	got := readAll(t, out)
	ra, rb, rc := readAll(t, a), readAll(t, b), readAll(t, c)
	want := map[string]mergedRec{"/d/1.jpg": ra["/d/1.jpg"], "/d/2.jpg": ra["/d/2.jpg"], "/d/3.jpg": rb["/d/3.jpg"],
		"/d/bad.jpg": rb["/d/bad.jpg"], "/d/4.jpg": rb["/d/4.jpg"]}
	_ = rc
	if len(got) != len(want) {
		t.Fatalf("merged %d records, want %d: %v", len(got), len(want), got)
	}
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%s missing", p)
			continue
		}
		if g.file.Hash != w.file.Hash || g.file.MtimeNs != w.file.MtimeNs || g.file.Err != w.file.Err {
			t.Errorf("%s: record %+v, want %+v", p, g.file, w.file)
		}
		if !sameBits(g.vec, w.vec) || !sameBits(g.sample.Text, w.sample.Text) || g.sample.Caption != w.sample.Caption || string(g.sample.JSON) != string(w.sample.JSON) {
			t.Errorf("%s: vector or sample differs from the input's", p)
		}
	}
	// The order of the inputs does not change the result.
	out2 := filepath.Join(dir, "out2.db")
	if _, err := Merge(out2, []string{c, b, a}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, g := range readAll(t, out2) {
		if w := got[p]; w.file.Hash != g.file.Hash || !sameBits(w.vec, g.vec) {
			t.Errorf("%s differs when the inputs come in another order", p)
		}
	}
	r, err := OpenReader(out, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.View(func(s *Snapshot) error {
		if st, ok := s.Shard("/d/00000.tar"); !ok || st.MtimeNs != 200 {
			t.Errorf("shard record %+v %v, want the later mtime 200", st, ok)
		}
		// Every input was a complete build of the same root (their folder):
		// the merge records it once.
		if st, err := s.Stats(); err != nil || st.LastBuild == nil || !st.LastBuild.Complete || !slices.Equal(st.LastBuild.Roots, []string{dir}) {
			t.Errorf("last build %+v (%v), want complete with roots [%s]", st.LastBuild, err, dir)
		}
		return nil
	})
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	a, other := filepath.Join(dir, "a.db"), filepath.Join(dir, "other.db")
	mergeFixture(t, a, testID, map[string]string{"/d/1.jpg": "one"}, 1)
	id := testID
	id.Model, id.WeightsHash = "other-model", "def"
	mergeFixture(t, other, id, map[string]string{"/d/2.jpg": "two"}, 1)
	out := filepath.Join(dir, "out.db")
	_, err := Merge(out, []string{a, other}, WriterOptions{})
	if !errors.Is(err, ErrMergeInput) || !errors.Is(err, ErrModelMismatch) || !strings.Contains(err.Error(), "other.db") || !strings.Contains(err.Error(), "other-model") {
		t.Errorf("merge of two models: %v, want ErrMergeInput naming other.db and its model", err)
	}
	if _, err := OpenReader(out, ReaderOptions{}); !errors.Is(err, ErrNoIndex) {
		t.Errorf("a refused merge created %s (%v)", out, err)
	}
	if _, err := Merge(out, []string{a, filepath.Join(dir, "missing.db")}, WriterOptions{}); !errors.Is(err, ErrNoIndex) || !strings.Contains(err.Error(), "missing.db") {
		t.Errorf("missing input: %v", err)
	}
	if _, err := Merge(a, []string{a}, WriterOptions{}); !errors.Is(err, ErrMergeInput) {
		t.Errorf("merge into an input: %v", err)
	}
	// An existing output of another model is refused too.
	if _, err := Merge(other, []string{a}, WriterOptions{}); !errors.Is(err, ErrModelMismatch) {
		t.Errorf("merge into an index of another model: %v", err)
	}
}

func TestSampleRoundTrip(t *testing.T) {
	for _, s := range []Sample{{}, {Caption: "a cat ✓", JSON: []byte(`{"k":1}`), Text: []float32{1, -0.5, 0}}} {
		got, err := decodeSample(encodeSample(s))
		if err != nil || got.Caption != s.Caption || string(got.JSON) != string(s.JSON) || !sameBits(got.Text, s.Text) {
			t.Errorf("round trip %+v = %+v, %v", s, got, err)
		}
	}
	enc := encodeSample(Sample{Caption: "x", Text: []float32{1}})
	for _, b := range [][]byte{nil, {2}, enc[:len(enc)-1], append(enc, 0)} {
		if _, err := decodeSample(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeSample(%x) = %v, want ErrCorrupt", b, err)
		}
	}
}

// TestForgetShard: forgetting a tar shard drops its samples (SHARD#KEY),
// their metadata and the shard's record.
func TestForgetShard(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	mergeFixture(t, db, testID, map[string]string{"/d/00000.tar#1": "one", "/d/00000.tar#2": "two", "/d/x.jpg": "three"}, 1)
	n, err := Forget(db, []string{"/d/00000.tar"}, WriterOptions{})
	if err != nil || n != 2 {
		t.Fatalf("forget: %d, %v; want 2 samples", n, err)
	}
	got := readAll(t, db)
	if len(got) != 1 || got["/d/x.jpg"].vec == nil {
		t.Errorf("left %v, want only /d/x.jpg", got)
	}
	r, err := OpenReader(db, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.View(func(s *Snapshot) error {
		if _, ok := s.Shard("/d/00000.tar"); ok {
			t.Error("the shard's record survived forget")
		}
		if _, ok, _ := s.Sample("/d/00000.tar#1"); ok {
			t.Error("a sample's metadata survived forget")
		}
		return nil
	})
}

// TestCheckSamples: Check finds a sample without a file record.
func TestCheckSamples(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	mergeFixture(t, db, testID, map[string]string{"/d/1.jpg": "one"}, 1)
	w, err := OpenWriter(db, testID, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutSample("/d/orphan.jpg", Sample{Caption: "no file"})
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := Check(db); err == nil || !strings.Contains(err.Error(), "orphan.jpg: no file record") {
		t.Errorf("check: %v, want the orphan sample named", err)
	}
}

// TestMergeKeepsFailureRecords: an index holding failures of both record
// versions (one written before failures had a kind, one with its kind and
// reach) passes Check, and a merge carries both over as they were.
func TestMergeKeepsFailureRecords(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.db"), filepath.Join(dir, "out.db")
	w := openW(t, in)
	var b Batch
	b.Put("/d/old.heic", File{Size: 1, MtimeNs: 5, Err: "decode: unsupported image format: HEIC/HEIF"}, nil)
	b.Put("/d/new.jxl", File{Size: 2, MtimeNs: 6, Err: "decode: unsupported image format: JPEG XL", Kind: FailFormat, Reach: "heic,jpeg"}, nil)
	b.Put("/d/ok.jpg", File{Size: 3, MtimeNs: 7, Hash: hashOf("ok")}, vec(1, testID.Dim))
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	err := w.update(func(tx *bolt.Tx) error {
		// The record of an earlier clipidx, exactly as it wrote it.
		return tx.Bucket(bFiles).Put([]byte("/d/old.heic"), v1Record(1, 5, Hash{}, 0, "decode: unsupported image format: HEIC/HEIF"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Check(in); err != nil {
		t.Fatalf("an index with both record versions: %v", err)
	}
	if _, err := Merge(out, []string{in}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, out) // checks the merged index too
	if f := got["/d/old.heic"].file; f.Err == "" || f.Kind != "" || f.Reach != "" {
		t.Errorf("version 1 failure merged as %+v", f)
	}
	if f := got["/d/new.jxl"].file; f.Kind != FailFormat || f.Reach != "heic,jpeg" {
		t.Errorf("version 2 failure merged as %+v, want its kind and reach kept", f)
	}
	if f := got["/d/ok.jpg"].file; f.Failed() || f.Kind != "" {
		t.Errorf("indexed file merged as %+v", f)
	}
}
