package index

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

func TestExpandBraces(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "a.tar", want: []string{"a.tar"}},
		{in: "s/{00000..00002}.tar", want: []string{"s/00000.tar", "s/00001.tar", "s/00002.tar"}},
		{in: "{8..10}", want: []string{"8", "9", "10"}},
		{in: "{08..10}", want: []string{"08", "09", "10"}},
		{in: "{a,b}/{0..1}", want: []string{"a/0", "a/1", "b/0", "b/1"}},
		{in: "x{a,{1..2}}y", want: []string{"xay", "x1y", "x2y"}},
		{in: "{2..1}", bad: true},
		{in: "{a}", bad: true},
		{in: "{0..", bad: true},
		{in: "a}", bad: true},
		{in: "{x..y}", bad: true},
		{in: "{0..99999999}", bad: true},
	} {
		got, err := ExpandBraces(c.in)
		if c.bad != (err != nil) || !c.bad && !slices.Equal(got, c.want) {
			t.Errorf("ExpandBraces(%q) = %q, %v; want %q (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in   string
		i, n int
		ok   bool
	}{
		{"0/1", 0, 1, true}, {"2/3", 2, 3, true}, {" 1 / 4 ", 1, 4, true},
		{"3/3", 0, 0, false}, {"0/0", 0, 0, false}, {"-1/2", 0, 0, false}, {"1", 0, 0, false}, {"a/b", 0, 0, false},
	} {
		i, n, err := ParseShard(c.in)
		if c.ok != (err == nil) || c.ok && (i != c.i || n != c.n) {
			t.Errorf("ParseShard(%q) = %d, %d, %v", c.in, i, n, err)
		}
		if !c.ok && !errors.Is(err, ErrShardSpec) {
			t.Errorf("ParseShard(%q): %v, want ErrShardSpec", c.in, err)
		}
	}
}

// member is one entry of a test tar.
type member struct {
	name string
	data string
	typ  byte // 0 = regular file
}

func writeTar(t testing.TB, path string, ms []member) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
		if m.typ != 0 {
			h.Typeflag, h.Size, h.Linkname = m.typ, 0, "elsewhere"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(m.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// img2datasetShard writes shard number s of n samples as img2dataset lays
// them out: KEY.jpg, KEY.txt, KEY.json, with the key shard‖index. Sample
// corrupt (if < n) has an image the decoder rejects.
func img2datasetShard(t testing.TB, dir string, s, n, corrupt int) string {
	var ms []member
	for i := range n {
		key := fmt.Sprintf("%05d%04d", s, i)
		img := png + fmt.Sprintf("shard %d sample %d", s, i)
		if i == corrupt {
			img = png + "CORRUPT " + key
		}
		ms = append(ms,
			member{name: key + ".jpg", data: img},
			member{name: key + ".txt", data: fmt.Sprintf("a photo of thing %d in shard %d\n", i, s)},
			member{name: key + ".json", data: fmt.Sprintf(`{"url": "http://example.com/%s.jpg", "key": "%s", "width": %d, "status": "success"}`, key, key, 100+i)})
	}
	p := filepath.Join(dir, fmt.Sprintf("%05d.tar", s))
	writeTar(t, p, ms)
	return p
}

func readAllSamples(t *testing.T, path string, max int64) ([]tarSample, error) {
	t.Helper()
	var out []tarSample
	err := readShard(context.Background(), path, max, func(s tarSample) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

func TestReadShard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.tar")
	writeTar(t, p, []member{
		{name: "a.jpg", data: png + "A"}, {name: "a.txt", data: "cap A\n"}, {name: "a.json", data: `{"k":1}`}, {name: "a.cls", data: "3"},
		{name: "sub/b.png", data: png + "B"},
		{name: "c.txt", data: "no image here"},
		{name: "d.jpg", data: png + "D1"}, {name: "d.png", data: png + "D2"},
		{name: "a.webp", data: png + "again"}, // a's key again, not consecutive
		{name: "../evil.jpg", data: png + "E"},
		{name: "/abs.jpg", data: png + "F"},
		{name: "big.jpg", data: png + strings.Repeat("x", 100)},
		{name: "link.jpg", typ: tar.TypeSymlink},
		{name: "e.tar.gz.jpg", data: png + "multi-dot"},
		{name: "dir/", typ: tar.TypeDir},
	})
	got, err := readAllSamples(t, p, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key, image, caption, json string
		err                       string
	}{
		{key: "a", image: png + "A", caption: "cap A", json: `{"k":1}`},
		{key: "sub/b", image: png + "B"},
		{key: "c", caption: "no image here", err: "no image member"},
		{key: "d", err: "2 image members"},
		{key: "a", err: "duplicate key"},
		{key: "../evil.jpg", err: "escapes the shard"},
		{key: "/abs.jpg", err: "escapes the shard"},
		{key: "big", err: "too large"},
		{key: "link", err: "not a regular file"},
		{key: "e", err: "no image member"}, // "tar.gz.jpg" is no image extension of ours
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		caption := ""
		if g.caption != nil {
			caption = *g.caption
		}
		if g.key != w.key || string(g.image) != w.image || caption != w.caption || string(g.json) != w.json {
			t.Errorf("sample %d = {%q %q %q %q}, want %+v", i, g.key, g.image, caption, g.json, w)
		}
		if w.err == "" && g.err != nil || w.err != "" && (g.err == nil || !strings.Contains(g.err.Error(), w.err)) {
			t.Errorf("sample %d (%s): error %v, want %q", i, g.key, g.err, w.err)
		}
	}

	// Not a tar; a tar cut short: the samples before the cut are kept.
	notTar := filepath.Join(dir, "n.tar")
	os.WriteFile(notTar, []byte("this is no tar archive at all, but long enough for a header? no."), 0o644)
	if _, err := readAllSamples(t, notTar, 1<<20); !errors.Is(err, ErrNotShard) {
		t.Errorf("not a tar: %v, want ErrNotShard", err)
	}
	full := img2datasetShard(t, dir, 7, 4, -1)
	b, _ := os.ReadFile(full)
	cut := filepath.Join(dir, "cut.tar")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	got, err = readAllSamples(t, cut, 1<<20)
	if !errors.Is(err, ErrNotShard) || len(got) == 0 || len(got) >= 4 {
		t.Errorf("truncated tar: %d samples, %v; want some samples and ErrNotShard", len(got), err)
	}
}

// textEnc embeds captions deterministically.
type textEnc struct{ calls atomic.Int64 }

func (e *textEnc) EncodeTexts(texts []string) ([]float32, error) {
	e.calls.Add(1)
	out := make([]float32, len(texts)*dim)
	for i, s := range texts {
		for j := range dim {
			out[i*dim+j] = float32(len(s)+j) + float32(s[j%len(s)])
		}
	}
	return out, nil
}

// datasetFixture writes three img2dataset shards of 6 samples (a corrupt
// member in shard 1) and a folder of plain files.
func datasetFixture(t *testing.T) (root string, roots []string) {
	root = t.TempDir()
	shards := filepath.Join(root, "shards")
	os.MkdirAll(shards, 0o755)
	for s := range 3 {
		corrupt := -1
		if s == 1 {
			corrupt = 2
		}
		img2datasetShard(t, shards, s, 6, corrupt)
	}
	photos := filepath.Join(root, "photos")
	for i := range 7 {
		write(t, filepath.Join(photos, fmt.Sprintf("p%d.png", i)), png+fmt.Sprintf("photo %d", i))
	}
	write(t, filepath.Join(photos, "copy.png"), png+"shard 0 sample 1") // same bytes as a sample
	return root, []string{filepath.Join(shards, "{00000..00002}.tar"), photos}
}

type snapshotRec struct {
	file   store.File
	vec    []float32
	sample store.Sample
	has    bool
}

func dump(t *testing.T, db string) map[string]snapshotRec {
	t.Helper()
	if err := store.Check(db); err != nil {
		t.Fatalf("check %s: %v", db, err)
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]snapshotRec{}
	err = r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error {
			smp, ok, err := s.Sample(p)
			out[p] = snapshotRec{file: f, vec: s.Vector(f.Vec), sample: smp, has: ok}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuildShards(t *testing.T) {
	root, roots := datasetFixture(t)
	enc, txt := &fakeEnc{}, &textEnc{}
	o := opts(enc)
	o.Captions, o.TextEncoder = true, txt
	var errs []string
	o.OnError = func(p string, err error) { errs = append(errs, p) }
	db := filepath.Join(t.TempDir(), "all.db")
	sum, err := Build(context.Background(), db, roots, o)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(root, "shards", "00001.tar") + "#000010002"
	if sum.Added != 17+7 || sum.Reused != 1 || sum.Failed != 1 || len(sum.Failures) != 1 || sum.Failures[0].Path != corrupt {
		t.Errorf("first build: %+v, want 24 added, 1 reused (copy.png), 1 failure (%s)", sum, corrupt)
	}
	all := dump(t, db)
	if len(all) != 26 {
		t.Errorf("%d records, want 26", len(all))
	}
	s0 := filepath.Join(root, "shards", "00000.tar") + "#000000003"
	rec := all[s0]
	if rec.vec == nil || !rec.has || rec.sample.Caption != "a photo of thing 3 in shard 0" || !strings.Contains(string(rec.sample.JSON), `"width": 103`) || len(rec.sample.Text) != dim {
		t.Errorf("%s: %+v, want its vector, caption, JSON and caption vector", s0, rec)
	}
	want := expectVec([]byte(png + "shard 0 sample 3"))
	for i := range want {
		if math.Abs(float64(want[i]-rec.vec[i])) > 1e-6 {
			t.Fatalf("%s has the vector of other content", s0)
		}
	}

	// Unchanged: nothing read, nothing embedded.
	calls := enc.calls.Load()
	sum, err = Build(context.Background(), db, roots, o)
	if err != nil || sum.Unchanged != 26 || sum.Added+sum.Updated+sum.Reused+sum.Failed+sum.Removed != 0 || enc.calls.Load() != calls {
		t.Errorf("unchanged rebuild: %+v, %v (encoder passes %d → %d)", sum, err, calls, enc.calls.Load())
	}
	// A shard rewritten with one sample changed, one gone: re-read,
	// vectors reused by content, the gone one removed.
	shard2 := filepath.Join(root, "shards", "00002.tar")
	var ms []member
	for i := range 5 {
		key := fmt.Sprintf("%05d%04d", 2, i)
		img := png + fmt.Sprintf("shard %d sample %d", 2, i)
		if i == 4 {
			img = png + "a new picture"
		}
		ms = append(ms, member{name: key + ".jpg", data: img}, member{name: key + ".txt", data: "new caption"})
	}
	writeTar(t, shard2, ms)
	sum, err = Build(context.Background(), db, roots, o)
	if err != nil || sum.Updated != 1 || sum.Removed != 1 || sum.Unchanged != 26-2 || sum.Failed != 0 {
		t.Errorf("after rewriting a shard: %+v, %v; want 1 updated, 1 removed, 24 unchanged", sum, err)
	}
	if r := dump(t, db)[shard2+"#000020000"]; r.sample.Caption != "new caption" || r.sample.JSON != nil {
		t.Errorf("caption not updated: %+v", r.sample)
	}
}

// TestSplitBuildMergeEqualsOneBuild splits the fixture across 3 machines,
// merges their indexes and compares with a single build.
func TestSplitBuildMergeEqualsOneBuild(t *testing.T) {
	_, roots := datasetFixture(t)
	work := t.TempDir()
	o := opts(&fakeEnc{})
	o.Captions, o.TextEncoder = true, &textEnc{}
	one := filepath.Join(work, "one.db")
	if _, err := Build(context.Background(), one, roots, o); err != nil {
		t.Fatal(err)
	}
	var parts []string
	seen := map[string]int{}
	for i := range 3 {
		o := o
		o.Shard, o.Shards = i, 3
		db := filepath.Join(work, fmt.Sprintf("part%d.db", i))
		if _, err := Build(context.Background(), db, roots, o); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, db)
		n := 0
		for p := range dump(t, db) {
			seen[p]++
			n++
		}
		if n == 0 {
			t.Errorf("shard %d/3 is empty", i)
		}
	}
	merged := filepath.Join(work, "merged.db")
	if _, err := store.Merge(merged, parts, store.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	a, b := dump(t, one), dump(t, merged)
	for p, n := range seen {
		if n != 1 {
			t.Errorf("%s indexed by %d machines, want exactly 1", p, n)
		}
	}
	if len(a) != len(b) {
		t.Errorf("single build has %d records, merged %d", len(a), len(b))
	}
	for p, ra := range a {
		rb, ok := b[p]
		switch {
		case !ok:
			t.Errorf("%s missing from the merge", p)
		case ra.file.Hash != rb.file.Hash || ra.file.Err != rb.file.Err || !slices.Equal(ra.vec, rb.vec):
			t.Errorf("%s differs: %+v vs %+v", p, ra.file, rb.file)
		case ra.sample.Caption != rb.sample.Caption || string(ra.sample.JSON) != string(rb.sample.JSON) || !slices.Equal(ra.sample.Text, rb.sample.Text):
			t.Errorf("%s: sample differs", p)
		}
	}
	o.Shard, o.Shards = 3, 3
	if _, err := Build(context.Background(), filepath.Join(work, "bad.db"), roots, o); !errors.Is(err, ErrShardSpec) {
		t.Errorf("--shard 3/3: %v, want ErrShardSpec", err)
	}
}

func TestBuildBadShards(t *testing.T) {
	dir := t.TempDir()
	notTar := filepath.Join(dir, "bad.tar")
	os.WriteFile(notTar, []byte(strings.Repeat("not a tar ", 100)), 0o644)
	good := img2datasetShard(t, dir, 0, 3, -1)
	o := opts(&fakeEnc{})
	db := filepath.Join(dir, "i.db")
	sum, err := Build(context.Background(), db, []string{notTar, good}, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Added != 3 || sum.Failed != 1 || sum.Failures[0].Path != notTar || !strings.Contains(sum.Failures[0].Error, "not a readable tar shard") {
		t.Errorf("%+v, want 3 added and %s failed as no tar", sum, notTar)
	}
	// The good shard damaged later: its samples stay, the shard fails.
	b, _ := os.ReadFile(good)
	os.WriteFile(good, b[:700], 0o644)
	sum, err = Build(context.Background(), db, []string{notTar, good}, o)
	if err != nil {
		t.Fatal(err)
	}
	recs := dump(t, db)
	kept := 0
	for p := range recs {
		if strings.HasPrefix(p, good+"#") {
			kept++
		}
	}
	if sum.Removed != 0 || kept != 3 || !slices.ContainsFunc(sum.Failures, func(f Failure) bool { return f.Path == good }) {
		t.Errorf("damaged shard: %+v, %d of its samples kept; want all 3 kept and the shard failed", sum, kept)
	}
	if _, err := Build(context.Background(), db, []string{filepath.Join(dir, "{0..1}.tar")}, o); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a pattern naming missing shards: %v", err)
	}
}

// BenchmarkBuildShards indexes 10 img2dataset shards of 1,000 samples
// with the fake encoder: the cost of streaming, hashing and recording
// samples, without a model.
func BenchmarkBuildShards(b *testing.B) {
	dir := b.TempDir()
	for s := range 10 {
		img2datasetShard(b, dir, s, 1000, -1)
	}
	o := opts(&fakeEnc{})
	o.BatchSize, o.CommitEvery = 64, 1024
	for i := 0; b.Loop(); i++ {
		db := filepath.Join(b.TempDir(), "i.db")
		sum, err := Build(context.Background(), db, []string{filepath.Join(dir, "{00000..00009}.tar")}, o)
		if err != nil || sum.Added != 10000 {
			b.Fatalf("%+v %v", sum, err)
		}
	}
}

// TestBuildKeepsSamplesOfUnreachableShard: a shard given through a link
// whose target is gone (an unmounted disk) keeps its samples, as a linked
// folder keeps its files, until the disk is back.
func TestBuildKeepsSamplesOfUnreachableShard(t *testing.T) {
	d := t.TempDir()
	disk := filepath.Join(d, "disk")
	os.MkdirAll(disk, 0o755)
	shard := img2datasetShard(t, disk, 0, 4, -1)
	link := filepath.Join(d, "train.tar")
	symlink(t, shard, link)
	db := filepath.Join(t.TempDir(), "i.db")
	sum, err := Build(context.Background(), db, []string{link}, opts(&fakeEnc{}))
	if err != nil || sum.Added != 4 {
		t.Fatalf("first build: %+v, %v; want 4 added", sum, err)
	}
	rename(t, disk, disk+".unmounted")
	var reported []string
	o := opts(&fakeEnc{})
	o.OnError = func(p string, err error) {
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s: %v, want it reported unreachable", p, err)
		}
		reported = append(reported, p)
	}
	sum, err = Build(context.Background(), db, []string{link}, o)
	if err != nil || sum.Removed != 0 {
		t.Fatalf("build with the disk gone: %+v, %v; want nothing removed", sum, err)
	}
	if !slices.Equal(reported, []string{link}) {
		t.Errorf("reported %q, want the link %s", reported, link)
	}
	n := 0
	for p := range dump(t, db) {
		if strings.HasPrefix(p, link+SampleSep) {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d samples of %s kept, want 4", n, link)
	}
	rename(t, disk+".unmounted", disk)
	sum, err = Build(context.Background(), db, []string{link}, opts(&fakeEnc{}))
	if err != nil || sum.Unchanged != 4 || sum.Added+sum.Removed != 0 {
		t.Errorf("build with the disk back: %+v, %v; want 4 unchanged", sum, err)
	}
}

// TestSampleDatedByItsMember: a sample whose image carries no date was
// dated by the shard's modification time, so writing the shard again
// (re-packing it) re-dated every such sample. The image member's own time,
// from the tar header, dates it now.
func TestSampleDatedByItsMember(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "00000.tar")
	writeTar(t, shard, []member{{name: "000000000.png", data: png + "sample"}, {name: "000000000.txt", data: "a caption"}})
	later := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(shard, later, later); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "i.db")
	if _, err := Build(context.Background(), db, []string{shard}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	ms, _ := readMetas(t, db)
	member := time.Unix(1700000000, 0) // writeTar's member time
	_, off := member.In(time.Local).Zone()
	if m := ms[shard+SampleSep+"000000000"]; m.TakenSource != store.TakenMtime || m.Taken != member.Unix()+int64(off) {
		t.Errorf("sample's metadata %+v: want taken %v (its member's time), not the shard's %v", m, member, later)
	}
}
