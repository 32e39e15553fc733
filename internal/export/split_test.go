package export

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// shareIndex writes the index of one machine of a split build: n
// webdataset samples of the tar shard shard, each with a caption and its
// caption vector when captions is set, with neither otherwise (a shard
// without .txt members). n = 0 is a share that holds nothing.
func shareIndex(t *testing.T, shard string, n int, captions bool) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "part.db")
	w, err := store.OpenWriter(db, testID, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n == 0 {
		return db
	}
	r := rand.New(rand.NewPCG(uint64(len(shard)), uint64(n)))
	var b store.Batch
	for i := range n {
		p := fmt.Sprintf("%s#%09d", shard, i)
		b.Put(p, store.File{Size: 10, MtimeNs: 1700000000000000000, Hash: sha256.Sum256([]byte(p))}, randVec(r))
		smp := store.Sample{JSON: []byte(fmt.Sprintf(`{"key": "%09d"}`, i))}
		if captions {
			smp.Caption, smp.Text = fmt.Sprintf("caption %d", i), randVec(r)
		}
		b.PutSample(p, smp)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	return db
}

// npyRows reads the row count and width of an NPY file's header.
func npyRows(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := readNPYHeader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return info.rows, info.cols
}

// TestSplitExportTextRowAligned: the machines of a split export of a build
// with captions, one of whose shares holds no caption, write text_emb row
// for row with img_emb in every partition (--captions on each), and
// without --captions a folder mixing partitions with and without text_emb
// is refused whichever machine comes second.
func TestSplitExportTextRowAligned(t *testing.T) {
	bare := shareIndex(t, "/data/00000.tar", 6, false)     // shard 0: no .txt members
	captioned := shareIndex(t, "/data/00001.tar", 3, true) // shard 1: captions

	t.Run("captions on every machine", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "emb")
		for i, db := range []string{bare, captioned} {
			res, err := exportCR(t, context.Background(), db, out, Options{Partition: i, Partitions: 2, Captions: CaptionsOn, NoSync: true})
			if err != nil {
				t.Fatalf("partition %d: %v", i, err)
			}
			if !res.TextEmb || res.CaptionsUnknown {
				t.Errorf("partition %d: %+v, want text_emb", i, res)
			}
		}
		for i, want := range []int{6, 3} {
			img, _ := npyRows(t, filepath.Join(out, "img_emb", fmt.Sprintf("img_emb_%d.npy", i)))
			txt, dim := npyRows(t, filepath.Join(out, "text_emb", fmt.Sprintf("text_emb_%d.npy", i)))
			if img != want || txt != want || dim != testDim {
				t.Errorf("partition %d: %d image rows, %d text rows of width %d; want %d and %d of %d", i, img, txt, dim, want, want, testDim)
			}
		}
		py := python(t, "numpy")
		var got []npyOut
		if err := json.Unmarshal(runPy(t, py, npyRead, filepath.Join(out, "text_emb", "text_emb_0.npy")), &got); err != nil {
			t.Fatal(err)
		}
		for j, n := range got[0].Norms {
			if n != 0 {
				t.Errorf("text_emb_0 row %d (no caption) has norm %g, want a zero row", j, n)
			}
		}
	})

	for _, order := range [][]int{{0, 1}, {1, 0}} {
		t.Run(fmt.Sprintf("without captions, partition %d first", order[0]), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "emb")
			dbs := []string{bare, captioned}
			res, err := exportCR(t, context.Background(), dbs[order[0]], out, Options{Partition: order[0], Partitions: 2, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			if wantUnknown := order[0] == 0; res.CaptionsUnknown != wantUnknown {
				t.Errorf("partition %d: CaptionsUnknown %v, want %v", order[0], res.CaptionsUnknown, wantUnknown)
			}
			before := tree(t, out)
			res, err = exportCR(t, context.Background(), dbs[order[1]], out, Options{Partition: order[1], Partitions: 2, NoSync: true})
			if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "text_emb") {
				t.Errorf("partition %d into a folder whose other partition differs in text_emb: %+v, %v; want ErrNotEmpty naming text_emb", order[1], res, err)
			}
			if after := tree(t, out); !slices.Equal(before, after) {
				t.Errorf("the refused export changed the folder: %q, was %q", after, before)
			}
		})
	}

	// --captions=false on every machine: no text_emb anywhere.
	out := filepath.Join(t.TempDir(), "emb")
	for i, db := range []string{bare, captioned} {
		res, err := exportCR(t, context.Background(), db, out, Options{Partition: i, Partitions: 2, Captions: CaptionsOff, NoSync: true})
		if err != nil || res.TextEmb || res.TextRows != 0 {
			t.Fatalf("partition %d without captions: %+v, %v", i, res, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "text_emb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("text_emb written with CaptionsOff: %v", err)
	}
}

// TestEmptyShareWritesEmptyPartition: in partition mode a share that holds
// no row writes a valid empty partition (0-row NPY files, numpy reads
// them; a 0-row Parquet file with the columns of a plain-file partition,
// hyparquet reads it); outside partition mode it stays ErrNoRows.
func TestEmptyShareWritesEmptyPartition(t *testing.T) {
	empty := shareIndex(t, "", 0, false)
	full := synthetic(t, 5)
	if _, err := exportCR(t, context.Background(), empty, filepath.Join(t.TempDir(), "emb"), Options{NoSync: true}); !errors.Is(err, ErrNoRows) {
		t.Errorf("outside partition mode: %v, want ErrNoRows", err)
	}
	out := filepath.Join(t.TempDir(), "emb")
	res, err := exportCR(t, context.Background(), empty, out, Options{Partition: 0, Partitions: 2, Captions: CaptionsOn, NoSync: true})
	if err != nil {
		t.Fatalf("empty share: %v", err)
	}
	if res.Rows != 0 || res.Partitions != 1 || len(res.Files) != 3 {
		t.Errorf("empty share: %+v, want 0 rows in one partition of 3 files", res)
	}
	for _, f := range []string{"img_emb/img_emb_0.npy", "text_emb/text_emb_0.npy"} {
		if rows, dim := npyRows(t, filepath.Join(out, f)); rows != 0 || dim != testDim {
			t.Errorf("%s: shape (%d, %d), want (0, %d)", f, rows, dim, testDim)
		}
	}
	// Auto: a share without rows cannot tell whether captions were built.
	out2 := filepath.Join(t.TempDir(), "emb")
	res, err = exportCR(t, context.Background(), empty, out2, Options{Partition: 1, Partitions: 2, NoSync: true})
	if err != nil || res.TextEmb || !res.CaptionsUnknown {
		t.Errorf("empty share, captions auto: %+v, %v; want no text_emb, CaptionsUnknown", res, err)
	}
	// A partition of plain files, to compare the columns with.
	out3 := filepath.Join(t.TempDir(), "emb")
	if _, err := exportCR(t, context.Background(), full, out3, Options{Partition: 0, Partitions: 2, NoSync: true}); err != nil {
		t.Fatal(err)
	}

	py := python(t, "numpy")
	var got []npyOut
	if err := json.Unmarshal(runPy(t, py, npyRead, filepath.Join(out, "img_emb", "img_emb_0.npy"), filepath.Join(out, "text_emb", "text_emb_0.npy")), &got); err != nil {
		t.Fatal(err)
	}
	for _, a := range got {
		if a.DType != "<f2" || !slices.Equal(a.Shape, []int{0, testDim}) {
			t.Errorf("numpy reads dtype %s shape %v, want <f2 (0, %d)", a.DType, a.Shape, testDim)
		}
	}
	cols, rows := hyparquet(t, filepath.Join(out, "metadata", "metadata_0.parquet"))
	if len(rows) != 0 {
		t.Errorf("metadata_0.parquet: %d rows, want 0", len(rows))
	}
	want, _ := hyparquet(t, filepath.Join(out3, "metadata", "metadata_0.parquet"))
	if !slices.EqualFunc(cols, want, func(a, b map[string]any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Errorf("empty partition's columns %v, want those of a plain-file partition %v", cols, want)
	}
}

// TestFaissFlatMakesItsFolder: FaissFlat into a folder that does not exist
// creates it, and removes it again when stopped or failing; an output it
// cannot create is named by its own name, not its temporary one.
func TestFaissFlatMakesItsFolder(t *testing.T) {
	db := synthetic(t, 20)
	faiss := func(ctx context.Context, out string) (*Result, error) {
		var res *Result
		var err error
		view(t, db, func(s *store.Snapshot) error {
			res, err = FaissFlat(ctx, s, out, Options{})
			return nil
		})
		return res, err
	}
	root := t.TempDir()
	out := filepath.Join(root, "a", "b", "knn.index")
	if res, err := faiss(context.Background(), out); err != nil || res.Rows != 20 {
		t.Fatalf("into a new folder: %+v, %v", res, err)
	}
	for _, f := range []string{out, out + ".paths"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}

	root = t.TempDir()
	out = filepath.Join(root, "a", "b", "knn.index")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := faiss(ctx, out)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: %v, want context.Canceled", err)
	}
	if res == nil || !slices.Equal(res.Removed, []string{filepath.Join(root, "a", "b"), filepath.Join(root, "a")}) {
		t.Errorf("stopped: %+v, want the two folders it made in Removed", res)
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("stopped: left %q", got)
	}

	defer func(f func(*os.File, []byte) (int, error)) { writeFile = f }(writeFile)
	full := errors.New("injected: no space left on device")
	writeFile = func(*os.File, []byte) (int, error) { return 0, full }
	if _, err := faiss(context.Background(), out); !errors.Is(err, full) {
		t.Errorf("failing write: %v, want the write error", err)
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("failed: left %q", got)
	}
	writeFile = (*os.File).Write

	// A name whose temporary name is too long for the folder.
	out = filepath.Join(root, strings.Repeat("x", 240)+".index")
	if _, err := faiss(context.Background(), out); err == nil || !strings.Contains(err.Error(), out) || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("name too long: %v, want an error naming %s, not its temporary file", err, out)
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	out = filepath.Join(file, "knn.index")
	if _, err := faiss(context.Background(), out); err == nil || !strings.Contains(err.Error(), out) || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("under a file: %v, want an error naming %s, not its temporary file", err, out)
	}
}
