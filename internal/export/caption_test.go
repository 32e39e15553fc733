package export

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// TestCaptionNullWithoutText: the caption column is null for a row with
// no caption: a plain file, and a sample without one (no .txt member, or
// an empty one: the index holds both as the empty caption, which text_emb
// also takes for none), with or without a JSON member, whose "caption"
// field the fixed column keeps out. A caption is written as it is.
func TestCaptionNullWithoutText(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ix.db")
	w, err := store.OpenWriter(db, testID, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 1))
	rows := []struct {
		path   string
		sample *store.Sample
		want   string // "" for null
	}{
		{"/d/00000.tar#000000000", &store.Sample{Caption: "a red door"}, "a red door"},
		{"/d/00000.tar#000000001", &store.Sample{JSON: []byte(`{"key": "000000001", "caption": "in the json"}`)}, ""},
		{"/d/00000.tar#000000002", &store.Sample{}, ""},
		{"/d/00000.tar#000000003", nil, ""}, // no sample record: an image alone
		{"/p/plain.jpg", nil, ""},
	}
	var b store.Batch
	for i, row := range rows {
		b.Put(row.path, store.File{Size: int64(i + 1), MtimeNs: 1700000000000000000, Hash: sha256.Sum256([]byte(row.path))}, randVec(r))
		if row.sample != nil {
			b.PutSample(row.path, *row.sample)
		}
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out := filepath.Join(t.TempDir(), "emb")
	view(t, db, func(s *store.Snapshot) error {
		_, err := ClipRetrieval(context.Background(), s, out, Options{})
		return err
	})
	meta := filepath.Join(out, "metadata", "metadata_0.parquet")
	paths := parquetColumn(t, meta, "image_path")
	captions := parquetColumn(t, meta, "caption")
	if len(paths) != len(rows) || len(captions) != len(rows) {
		t.Fatalf("%d paths and %d captions, want %d rows", len(paths), len(captions), len(rows))
	}
	for i, row := range rows {
		c := captions[i]
		switch {
		case string(paths[i].ByteArray()) != row.path:
			t.Errorf("row %d is %q, want %q", i, paths[i].ByteArray(), row.path)
		case row.want == "" && !c.IsNull():
			t.Errorf("%s: caption %q, want null", row.path, c.ByteArray())
		case row.want != "" && (c.IsNull() || string(c.ByteArray()) != row.want):
			t.Errorf("%s: caption %v, want %q", row.path, c, row.want)
		}
	}
}
