package index

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// TestSampleMemberWithoutTime: a sample whose image member has no time
// (mtime 0, as writers of reproducible archives put, or a time before
// 1970) and no date of its own is dated by its shard's modification time,
// as a file is by its own, not 1970-01-01; a member with a time keeps it.
func TestSampleMemberWithoutTime(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "00000.tar")
	f, err := os.Create(shard)
	if err != nil {
		t.Fatal(err)
	}
	dated := time.Unix(1600000000, 0)
	members := []struct {
		key   string
		mtime time.Time
	}{{"000000000", time.Unix(0, 0)}, {"000000001", time.Unix(-86400*365, 0)}, {"000000002", dated}}
	tw := tar.NewWriter(f)
	for _, m := range members {
		data := png + "sample " + m.key
		if err := tw.WriteHeader(&tar.Header{Name: m.key + ".png", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: m.mtime}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	written := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(shard, written, written); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "i.db")
	if _, err := Build(context.Background(), db, []string{shard}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	ms, _ := readMetas(t, db)
	wall := func(at time.Time) int64 { // Taken: the wall clock in this machine's zone
		_, off := at.In(time.Local).Zone()
		return at.Unix() + int64(off)
	}
	for _, m := range members {
		want := wall(written)
		if m.mtime.Equal(dated) {
			want = wall(dated)
		}
		got := ms[shard+SampleSep+m.key]
		if got.TakenSource != store.TakenMtime || got.Taken != want {
			t.Errorf("sample %s (member time %v): taken %s (%s), want %s", m.key, m.mtime.UTC(),
				time.Unix(got.Taken, 0).UTC(), got.TakenSource, time.Unix(want, 0).UTC())
		}
	}
}
