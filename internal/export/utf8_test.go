package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/clipidx/clipidx/store"
)

// TestParquetPathsNotUTF8: a path (and a frame's video) whose bytes are
// not UTF-8 is written to its STRING column as valid UTF-8, U+FFFD for the
// invalid bytes (Parquet's STRING is UTF-8: pyarrow, polars and arrow-rs
// fail on another), and its exact bytes to image_path_bytes and
// video_path_bytes, null on the other rows; camera names likewise.
func TestParquetPathsNotUTF8(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ix.db")
	w, err := store.OpenWriter(db, testID, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 1))
	var b store.Batch
	paths := []string{"/p/caf\xe9.jpg", "/p/ok.jpg", store.FramePath("/v/\xff.mp4", 1.5)}
	for i, p := range paths {
		b.Put(p, store.File{Size: int64(i + 1), MtimeNs: 1700000000000000000, Hash: sha256.Sum256([]byte(p))}, randVec(r))
	}
	b.PutMeta(paths[0], store.Meta{Make: "Maker\xe9", Model: "M1"})
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
	col := func(name string) []parquet.Value { return parquetColumn(t, meta, name) }
	if n := len(col("image_path")); n != len(paths) {
		t.Fatalf("image_path: %d values read, want %d", n, len(paths))
	}
	for _, name := range []string{"image_path", "video_path", "camera_make"} {
		for _, v := range col(name) {
			if !utf8.Valid(v.ByteArray()) {
				t.Errorf("column %s holds %q, not UTF-8", name, v.ByteArray())
			}
		}
	}
	got := map[string]bool{}
	for _, v := range col("image_path_bytes") {
		if !v.IsNull() {
			got[string(v.ByteArray())] = true
		}
	}
	if len(got) != 2 || !got[paths[0]] || !got[paths[2]] {
		t.Errorf("image_path_bytes %v, want the exact bytes of %q and %q only", got, paths[0], paths[2])
	}
	vb := col("video_path_bytes")
	n := 0
	for _, v := range vb {
		if !v.IsNull() {
			n++
			if !bytes.Equal(v.ByteArray(), []byte("/v/\xff.mp4")) {
				t.Errorf("video_path_bytes %q, want /v/\\xff.mp4", v.ByteArray())
			}
		}
	}
	if n != 1 {
		t.Errorf("%d video_path_bytes set, want 1", n)
	}
}
