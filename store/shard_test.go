package store

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestShardStatCtime: a shard's record keeps its ctime after the size and
// mtime; a record without one (an older clipidx wrote 16 bytes) still
// decodes, with no ctime, and a stat whose ctime is not known is written
// as such a record, which an older clipidx reads. A value of another
// length is no record.
func TestShardStatCtime(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	w := openW(t, db)
	var b Batch
	b.PutShard("/d/00000.tar", ShardStat{Size: 10240, MtimeNs: 7, CtimeNs: 9})
	b.PutShard("/d/00001.tar", ShardStat{Size: 10240, MtimeNs: 7})
	commit(t, w, &b)
	err := w.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bShards)
		if n := len(bk.Get([]byte("/d/00001.tar"))); n != 16 {
			t.Errorf("a stat without a ctime is %d bytes, want 16 (as an older clipidx reads)", n)
		}
		old := binary.BigEndian.AppendUint64(u64(20480), 8) // as an older clipidx wrote it
		if err := bk.Put([]byte("/d/00002.tar"), old); err != nil {
			return err
		}
		return bk.Put([]byte("/d/00003.tar"), append(old, 1, 2, 3))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ShardStat{
		"/d/00000.tar": {Size: 10240, MtimeNs: 7, CtimeNs: 9},
		"/d/00001.tar": {Size: 10240, MtimeNs: 7},
		"/d/00002.tar": {Size: 20480, MtimeNs: 8},
	}
	check := func(what string) {
		t.Helper()
		view(t, db, func(s *Snapshot) {
			for p, st := range want {
				if got, ok := s.Shard(p); !ok || got != st {
					t.Errorf("%s: Shard(%s) = %+v, %v; want %+v", what, p, got, ok, st)
				}
			}
			if got, ok := s.Shard("/d/00003.tar"); ok {
				t.Errorf("%s: a 19-byte value read as %+v", what, got)
			}
		})
	}
	check("written")

	// The next build stamps the older record with the shard's ctime.
	b.Reset()
	b.PutShard("/d/00002.tar", ShardStat{Size: 20480, MtimeNs: 8, CtimeNs: 11})
	commit(t, w, &b)
	want["/d/00002.tar"] = ShardStat{Size: 20480, MtimeNs: 8, CtimeNs: 11}
	check("stamped")
}

// TestSplitFrameOfSamples: a webdataset sample whose key holds "#t=5"
// (member scene#t=5.png, or t=5.png) is no video frame, wherever the
// shard lies and however its name is cased; a video whose own name holds
// the separator, ".tar" included, still has frames.
func TestSplitFrameOfSamples(t *testing.T) {
	for _, c := range []struct {
		path  string
		video string // "" when no frame
	}{
		{"/d/s.tar#scene#t=5", ""},
		{"/d/s.TAR#scene#t=5", ""},
		{"/d/s.tar#t=5", ""},
		{"/d/s.tar#dir/scene#t=5", ""},
		{"/d/s.tar#a.b/scene#t=12.5", ""},
		{"/d/s.tar#x#y#t=0", ""},
		{"/d/#x.tar#scene#t=5", ""},
		{"/d/s.tar#.x#t=5", ""}, // a member with no key before its dot
		{`C:\d\s.tar#scene#t=5`, ""},
		{"/v/clip#1.mp4#t=5", "/v/clip#1.mp4"},
		{"/v/backup.tar#2.mp4#t=5", "/v/backup.tar#2.mp4"},
		{"/v/x.tar#y/clip.mp4#t=5", "/v/x.tar#y/clip.mp4"},
		{"/v/x.tar/clip.mp4#t=5", "/v/x.tar/clip.mp4"},
		{"/v/a.tar.mp4#t=1.5", "/v/a.tar.mp4"},
		{`C:\v\x.tar#y\clip.mp4#t=5`, `C:\v\x.tar#y\clip.mp4`},
	} {
		v, _, ok := SplitFrame(c.path)
		if ok != (c.video != "") || v != c.video {
			t.Errorf("SplitFrame(%q) = %q, %v; want %q", c.path, v, ok, c.video)
		}
	}
}

// TestVideoCountsSkipsSamples: status counts a video's frames, never a
// sample whose key looks like one.
func TestVideoCountsSkipsSamples(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	w := openW(t, db)
	var b Batch
	for i, p := range []string{"/d/s.tar#scene#t=5", "/d/s.tar#scene#t=6", "/v/clip#1.mp4#t=0", "/v/clip#1.mp4#t=5", "/v/a.png"} {
		b.Put(p, File{Size: 1, MtimeNs: 1, Hash: hashOf(p)}, vec(uint64(i+1), testID.Dim))
	}
	commit(t, w, &b)
	view(t, db, func(s *Snapshot) {
		if videos, frames := s.VideoCounts(); videos != 1 || frames != 2 {
			t.Errorf("VideoCounts = %d videos, %d frames; want 1, 2", videos, frames)
		}
	})
}
