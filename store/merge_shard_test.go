package store

import (
	"maps"
	"path/filepath"
	"testing"
)

// shardIndex writes an index at path holding the samples of the tar shard
// /d/s.tar read at stat st: key → content (a failure when ""), each with
// its caption, the shard's mtime as its own (as a build records a
// sample). complete records the shard as read to its end.
func shardIndex(t *testing.T, path string, st ShardStat, keys map[string]string, complete bool) {
	t.Helper()
	w, err := OpenWriter(path, testID, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b Batch
	for k, c := range keys {
		p := "/d/s.tar" + SampleSep + k
		if c == "" {
			b.Put(p, File{Size: 1, MtimeNs: st.MtimeNs, Err: "decode: broken"}, nil)
			continue
		}
		h := hashOf(c)
		b.Put(p, File{Size: int64(len(c)), MtimeNs: st.MtimeNs, Hash: h}, vec(uint64(h[0])<<8|uint64(h[1]), testID.Dim))
		b.PutSample(p, Sample{Caption: "caption of " + c})
	}
	if complete {
		b.PutShard("/d/s.tar", st)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(LastBuild{Roots: []string{"/d/s.tar"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
}

// shardState is what an index holds of /d/s.tar: its samples' keys →
// caption ("failed" for a failure) and the shard's record.
func shardState(t *testing.T, path string) (map[string]string, ShardStat) {
	t.Helper()
	keys := map[string]string{}
	for p, r := range readAll(t, path) { // checks the index too
		k := p[len("/d/s.tar"+SampleSep):]
		if r.file.Failed() {
			keys[k] = "failed"
		} else {
			keys[k] = r.sample.Caption
		}
	}
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var st ShardStat
	r.View(func(s *Snapshot) error {
		st, _ = s.Shard("/d/s.tar")
		return nil
	})
	return keys, st
}

// TestMergeShardVersions: a tar shard written again between two builds
// (keys 0,1,2,3, then 0,1,4,5) merges as its later version alone, in
// either order and into an out that holds either version: the samples
// only the older version had are not searchable after the merge, and a
// build, which skips the shard as unchanged, could never remove them.
func TestMergeShardVersions(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := ShardStat{Size: 4000, MtimeNs: 10}, ShardStat{Size: 4100, MtimeNs: 20}
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	shardIndex(t, a, v1, map[string]string{"0": "zero", "1": "one", "2": "two", "3": "three"}, true)
	shardIndex(t, b, v2, map[string]string{"0": "zero", "1": "one again", "4": "four", "5": "five"}, true)
	want := map[string]string{"0": "caption of zero", "1": "caption of one again", "4": "caption of four", "5": "caption of five"}
	check := func(name, out string, stale int, sum MergeSummary, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		keys, st := shardState(t, out)
		if !maps.Equal(keys, want) || st != v2 {
			t.Errorf("%s: holds %v with shard record %+v, want %v and %+v", name, keys, st, want, v2)
		}
		if sum.Stale != stale {
			t.Errorf("%s: %d records left out as stale, want %d", name, sum.Stale, stale)
		}
	}
	for _, order := range [][]string{{a, b}, {b, a}} {
		out := filepath.Join(dir, filepath.Base(order[0])+"-first.db")
		sum, err := Merge(out, order, WriterOptions{})
		check("merge "+filepath.Base(order[0])+" first", out, 4, sum, err)
	}
	// Into an out holding the older version: its own samples go.
	out := filepath.Join(dir, "old-out.db")
	if _, err := Merge(out, []string{a}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	sum, err := Merge(out, []string{b}, WriterOptions{})
	check("merge the later version into out holding the older", out, 4, sum, err)
	// Into an out holding the later version: the input's samples stay out.
	out = filepath.Join(dir, "new-out.db")
	if _, err := Merge(out, []string{b}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	sum, err = Merge(out, []string{a}, WriterOptions{})
	check("merge the older version into out holding the later", out, 4, sum, err)
	// Merging the same again changes nothing.
	sum, err = Merge(out, []string{a, b}, WriterOptions{})
	check("merge both again", out, 4, sum, err)
}

// TestMergeShardVersionsFailures: the later version's records win whole,
// a failure of it over an indexed sample of the older version too; an
// index that recorded no version of the shard (its read cut short) gives
// only the samples of the kept version (by their mtime).
func TestMergeShardVersionsFailures(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := ShardStat{Size: 4000, MtimeNs: 10}, ShardStat{Size: 4100, MtimeNs: 20}
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	cut1, cut2 := filepath.Join(dir, "cut1.db"), filepath.Join(dir, "cut2.db")
	shardIndex(t, a, v1, map[string]string{"0": "zero", "1": "one"}, true)
	shardIndex(t, b, v2, map[string]string{"0": "", "2": "two"}, true)
	shardIndex(t, cut1, v1, map[string]string{"7": "seven"}, false)
	shardIndex(t, cut2, v2, map[string]string{"8": "eight"}, false)
	out := filepath.Join(dir, "out.db")
	sum, err := Merge(out, []string{cut1, a, cut2, b}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys, st := shardState(t, out)
	want := map[string]string{"0": "failed", "2": "caption of two", "8": "caption of eight"}
	if !maps.Equal(keys, want) || st != v2 || sum.Stale != 3 {
		t.Errorf("holds %v, shard %+v, %d stale; want %v, %+v, 3 stale", keys, st, sum.Stale, want, v2)
	}
	// A shard recorded at the same mtime with another size is another
	// version too: the larger one is kept, whatever the order.
	v3 := ShardStat{Size: 4200, MtimeNs: 20}
	c := filepath.Join(dir, "c.db")
	shardIndex(t, c, v3, map[string]string{"9": "nine"}, true)
	for _, order := range [][]string{{b, c}, {c, b}} {
		out := filepath.Join(dir, filepath.Base(order[0])+"-size.db")
		if _, err := Merge(out, order, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		if keys, st := shardState(t, out); !maps.Equal(keys, map[string]string{"9": "caption of nine"}) || st != v3 {
			t.Errorf("merge of %s first: holds %v, shard %+v; want only 9 and %+v", filepath.Base(order[0]), keys, st, v3)
		}
	}
}

// TestMergeShardVersionsCtime: a shard of the same size and mtime with
// another ctime (written again with its mtime kept) is another version,
// the later ctime kept; a record that does not know the ctime (an older
// clipidx wrote it) is of the same version as one that does.
func TestMergeShardVersionsCtime(t *testing.T) {
	dir := t.TempDir()
	early, late, unknown := ShardStat{Size: 10240, MtimeNs: 5, CtimeNs: 6}, ShardStat{Size: 10240, MtimeNs: 5, CtimeNs: 9}, ShardStat{Size: 10240, MtimeNs: 5}
	a, b, c := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")
	shardIndex(t, a, early, map[string]string{"0": "zero", "1": "one"}, true)
	shardIndex(t, b, late, map[string]string{"0": "zero", "2": "two"}, true)
	shardIndex(t, c, unknown, map[string]string{"3": "three"}, true)
	for _, order := range [][]string{{a, b, c}, {c, b, a}} {
		out := filepath.Join(dir, filepath.Base(order[0])+"-out.db")
		if _, err := Merge(out, order, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"0": "caption of zero", "2": "caption of two", "3": "caption of three"}
		if keys, st := shardState(t, out); !maps.Equal(keys, want) || st != late {
			t.Errorf("merge of %s first: holds %v, shard %+v; want %v and %+v", filepath.Base(order[0]), keys, st, want, late)
		}
	}
}

// TestShardPlanShardOf: a record belongs to the longest recorded shard
// its path starts with (a folder or a key may hold the separator).
func TestShardPlanShardOf(t *testing.T) {
	p := shardPlan{win: map[string]ShardStat{"/d/a.tar": {}, "/d/a.tar#x/b.tar": {}}}
	for path, want := range map[string]string{
		"/d/a.tar":           "/d/a.tar",
		"/d/a.tar#1":         "/d/a.tar",
		"/d/a.tar#k#t=5":     "/d/a.tar",
		"/d/a.tar#x/b.tar#2": "/d/a.tar#x/b.tar",
		"/d/a.tar.jpg":       "",
		"/d/b.tar#1":         "",
	} {
		if got, _ := p.shardOf(path); got != want {
			t.Errorf("shardOf(%q) = %q, want %q", path, got, want)
		}
	}
}
