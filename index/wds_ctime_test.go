package index

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/ctime"
	"github.com/clipidx/clipidx/store"
)

func TestShardUnchanged(t *testing.T) {
	rec := store.ShardStat{Size: 10240, MtimeNs: 7, CtimeNs: 9}
	for _, c := range []struct {
		name string
		rec  store.ShardStat
		f    found
		want bool
	}{
		{"same stat", rec, found{size: 10240, mtimeNs: 7, ctimeNs: 9}, true},
		{"ctime moved (swapped, copied over)", rec, found{size: 10240, mtimeNs: 7, ctimeNs: 10}, false},
		{"mtime moved", rec, found{size: 10240, mtimeNs: 8, ctimeNs: 9}, false},
		{"size changed", rec, found{size: 20480, mtimeNs: 7, ctimeNs: 9}, false},
		{"no ctime read (Windows)", rec, found{size: 10240, mtimeNs: 7}, true},
		{"recorded without a ctime", store.ShardStat{Size: 10240, MtimeNs: 7}, found{size: 10240, mtimeNs: 7, ctimeNs: 10}, true},
	} {
		if got := shardUnchanged(c.rec, c.f); got != c.want {
			t.Errorf("%s: shardUnchanged = %v, want %v", c.name, got, c.want)
		}
	}
}

// twoShards writes shards 00000.tar and 00001.tar of 4 samples each, of
// one size, both with the mtime mt.
func twoShards(t *testing.T, dir string, mt time.Time) (s0, s1 string) {
	t.Helper()
	s0, s1 = img2datasetShard(t, dir, 0, 4, -1), img2datasetShard(t, dir, 1, 4, -1)
	putTimes(t, s0, mt)
	putTimes(t, s1, mt)
	a, err := os.Stat(s0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(s1)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size() != b.Size() {
		t.Fatalf("shards of %d and %d bytes, want one size", a.Size(), b.Size())
	}
	return s0, s1
}

// wantShardSamples checks that the records of shard number n at path are
// its samples: keys, captions and vectors of its own content.
func wantShardSamples(t *testing.T, db, path string, n int) {
	t.Helper()
	all := dump(t, db)
	for i := range 4 {
		p := path + SampleSep + fmt.Sprintf("%05d%04d", n, i)
		rec, ok := all[p]
		if !ok {
			t.Errorf("no record %s", p)
			continue
		}
		if want := fmt.Sprintf("a photo of thing %d in shard %d", i, n); rec.sample.Caption != want {
			t.Errorf("%s: caption %q, want %q", p, rec.sample.Caption, want)
		}
		want := expectVec([]byte(png + fmt.Sprintf("shard %d sample %d", n, i)))
		for j := range want {
			if rec.vec == nil || math.Abs(float64(want[j]-rec.vec[j])) > 1e-6 {
				t.Errorf("%s has the vector of other content", p)
				break
			}
		}
	}
	for p := range all {
		if strings.HasPrefix(p, path+SampleSep) && !strings.HasPrefix(p, path+SampleSep+fmt.Sprintf("%05d", n)) {
			t.Errorf("%s: a record of another shard's sample", p)
		}
	}
}

// TestShardCtimeSeesSwap: two shards of one size and mtime swapped by
// name, then one copied over the other with its mtime put back, are read
// again by their ctime: each shard's records describe its own samples
// (reused by content, no model run). Before the ctime, the build said
// "unchanged 8" and each shard kept the other's records.
func TestShardCtimeSeesSwap(t *testing.T) {
	needCtime(t)
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	mt := time.Date(2023, 3, 1, 12, 0, 0, 0, time.UTC)
	s0, s1 := twoShards(t, d, mt)
	roots := []string{filepath.Join(d, "{00000..00001}.tar")}
	e := &fakeEnc{}
	build := func(want string) {
		t.Helper()
		sum, err := Build(context.Background(), db, roots, opts(e))
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("summary %s, want %s", got, want)
		}
	}
	build("added=8 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	build("added=0 updated=0 unchanged=8 reused=0 removed=0 failed=0")

	nextTick()
	tmp := filepath.Join(d, "tmp")
	rename(t, s0, tmp)
	rename(t, s1, s0)
	rename(t, tmp, s1)
	calls := e.calls.Load()
	build("added=0 updated=0 unchanged=0 reused=8 removed=8 failed=0")
	if e.calls.Load() != calls {
		t.Errorf("swapped shards ran the model (%d calls)", e.calls.Load()-calls)
	}
	wantShardSamples(t, db, s0, 1)
	wantShardSamples(t, db, s1, 0)
	build("added=0 updated=0 unchanged=8 reused=0 removed=0 failed=0")

	// 00000.tar (shard 1's samples) copied over 00001.tar, mtime kept.
	nextTick()
	data, err := os.ReadFile(s0)
	if err != nil {
		t.Fatal(err)
	}
	write(t, s1, string(data))
	putTimes(t, s1, mt)
	build("added=0 updated=0 unchanged=4 reused=4 removed=4 failed=0")
	wantShardSamples(t, db, s1, 1)
}

// TestShardCtimeStampsOlderIndex: a shard recorded without a ctime (by an
// older clipidx) takes its ctime at the next build without being read
// (what changed before stays unseen, as for files), and a shard rewritten
// with its size and mtime put back after that is read again.
func TestShardCtimeStampsOlderIndex(t *testing.T) {
	needCtime(t)
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	mt := time.Date(2023, 3, 1, 12, 0, 0, 0, time.UTC)
	s0, s1 := twoShards(t, d, mt)
	roots := []string{filepath.Join(d, "{00000..00001}.tar")}
	e := &fakeEnc{}
	if _, err := Build(context.Background(), db, roots, opts(e)); err != nil {
		t.Fatal(err)
	}
	// The shard records as an older clipidx wrote them: size and mtime.
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var batch store.Batch
	for _, p := range []string{s0, s1} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		batch.PutShard(p, store.ShardStat{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()})
	}
	if err := w.Commit(&batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Shard 0 zeroed (no tar any more), its size and mtime put back: a
	// build that read it would report it.
	zero(t, s0, mt)

	sum, err := Build(context.Background(), db, roots, opts(e))
	if err != nil || sumOf(sum) != "added=0 updated=0 unchanged=8 reused=0 removed=0 failed=0" {
		t.Fatalf("first build on the older index: %s, %v; want 8 unchanged, nothing read", sumOf(sum), err)
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.View(func(s *store.Snapshot) error {
		for _, p := range []string{s0, s1} {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if st, ok := s.Shard(p); !ok || st.CtimeNs == 0 || st.CtimeNs != ctime.Of(fi) {
				t.Errorf("%s: recorded %+v (%v), the shard's ctime is %d", p, st, ok, ctime.Of(fi))
			}
		}
		return nil
	})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}

	nextTick()
	zero(t, s1, mt)
	sum, err = Build(context.Background(), db, roots, opts(e))
	if err != nil || sum.Failed != 1 || len(sum.Failures) != 1 || sum.Failures[0].Path != s1 {
		t.Fatalf("build after shard 1 was zeroed with its mtime put back: %s, %+v, %v; want it read and failed", sumOf(sum), sum.Failures, err)
	}
}

// zero overwrites the file at path with as many zero bytes and gives it
// the mtime mt back.
func zero(t *testing.T, path string, mt time.Time) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, fi.Size()), 0o644); err != nil {
		t.Fatal(err)
	}
	putTimes(t, path, mt)
}
