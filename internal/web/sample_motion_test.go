package web

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/index"
)

// TestSampleNotMotionUnread: every webdataset sample carried
// "motion_unread": true, so the page asked /live/ID of each (404: a
// sample is never served as a Motion Photo).
func TestSampleNotMotionUnread(t *testing.T) {
	imgs := photos(t)
	shard := filepath.Join(t.TempDir(), "00000.tar")
	writeShard(t, shard, []shardMember{
		{"00000.jpg", mustRead(t, filepath.Join(imgs, "gray_260x200.png"))},
		{"00001.png", mustRead(t, filepath.Join(imgs, "wide_300x200.png"))},
	})
	db := filepath.Join(t.TempDir(), "index.db")
	build(t, db, index.Options{}, shard)
	e := serveDB(t, db, nil)
	a := e.search(t, "/api/search?k=10&q=photo")
	if len(a.Results) != 2 {
		t.Fatalf("%d results, want the 2 samples", len(a.Results))
	}
	for _, r := range a.Results {
		if !strings.HasPrefix(r.Path, shard+"#") {
			t.Errorf("result %s is no sample of %s", r.Path, shard)
		}
		if r.MotionUnread {
			t.Errorf("sample %s: motion_unread set", r.Path)
		}
	}
}
