package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestSplitJoinExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float32{0, -0, 1, -1, 0.5, 1e-30, -1e-30, math.SmallestNonzeroFloat32, math.MaxFloat32 / 2,
		math.Float32frombits(0x3f80_8000), math.Float32frombits(0xbf80_ffff), math.Float32frombits(0x3f7f_ffff)}
	for range 100000 {
		vals = append(vals, float32(r.NormFloat64()*0.05))
	}
	for _, x := range vals {
		hi, lo := Split(x)
		if got := Join(hi, lo); math.Float32bits(got) != math.Float32bits(x) {
			t.Fatalf("Join(Split(%g)) = %g", x, got)
		}
		approx := math.Float32frombits(uint32(hi) << 16)
		if d := math.Abs(float64(approx) - float64(x)); d > math.Abs(float64(x))/256+1e-38 {
			t.Fatalf("hi of %g = %g, error %g over 2^-8 relative", x, approx, d)
		}
	}
}

func TestFileRecordRoundTrip(t *testing.T) {
	for _, f := range []File{
		{},
		{Size: 12, MtimeNs: -5, Hash: Hash{1, 2, 3}, Vec: 77},
		{Size: 1 << 40, MtimeNs: 1700000000123456789, Err: "decode: corrupt JPEG ✗"},
		{Size: 9, MtimeNs: 3, Hash: Hash{4}, Err: "decode: unsupported image format: HEIC/HEIF", Kind: FailFormat, Reach: "bmp,gif,jpeg,png"},
		{Size: 9, Err: "x", Kind: FailOther},
		{Size: 9, Err: "x", Reach: "jpeg"},
	} {
		got, err := decodeFile(encodeFile(f))
		if err != nil || got != f {
			t.Errorf("round trip %+v = %+v, %v", f, got, err)
		}
	}
	v2 := encodeFile(File{Err: "x", Kind: FailCorrupt, Reach: "png"})
	for _, b := range [][]byte{nil, {2}, {3}, encodeFile(File{Err: "x"})[:58], v2[:len(v2)-1], append(v2, 0),
		append([]byte{3}, v2[1:]...)} {
		if _, err := decodeFile(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeFile(%x) err = %v, want ErrCorrupt", b, err)
		}
	}
}

// v1Record lays out a record as clipidx wrote it before failures had a
// kind (version 1), byte by byte, independently of encodeFile.
func v1Record(size, mtime int64, h Hash, vec VecID, errText string) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	b = binary.BigEndian.AppendUint64(b, uint64(mtime))
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(vec))
	b = binary.AppendUvarint(b, uint64(len(errText)))
	return append(b, errText...)
}

// TestFileRecordVersions: a version 1 record (an index written by an
// earlier clipidx) still decodes, with its failure's kind and reach
// unknown; a failure with a kind is written as version 2; a record with
// nothing to say about a failure keeps the version 1 bytes.
func TestFileRecordVersions(t *testing.T) {
	old := v1Record(42, 7, Hash{9}, 0, "decode /p/a.heic: unsupported image format: HEIC/HEIF")
	f, err := decodeFile(old)
	want := File{Size: 42, MtimeNs: 7, Hash: Hash{9}, Err: "decode /p/a.heic: unsupported image format: HEIC/HEIF"}
	if err != nil || f != want {
		t.Fatalf("version 1 record = %+v, %v; want %+v", f, err, want)
	}
	if again := encodeFile(f); !bytes.Equal(again, old) {
		t.Errorf("a record without kind or reach is written as %x, want the version 1 bytes %x", again, old)
	}
	ok := v1Record(5, 6, Hash{1}, 3, "")
	if f, err := decodeFile(ok); err != nil || f.Vec != 3 || !bytes.Equal(encodeFile(f), ok) {
		t.Errorf("indexed version 1 record: %+v, %v, re-encoded %x", f, err, encodeFile(f))
	}
	f.Kind, f.Reach = FailFormat, "jpeg,png"
	b := encodeFile(f)
	if b[0] != 2 {
		t.Errorf("a failure with a kind is written as version %d, want 2", b[0])
	}
	if got, err := decodeFile(b); err != nil || got != f {
		t.Errorf("version 2 round trip: %+v, %v; want %+v", got, err, f)
	}
}

func FuzzDecodeFile(f *testing.F) {
	f.Add(encodeFile(File{Size: 3, Err: "bad"}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeFile(b)
		if err == nil {
			if again, err := decodeFile(encodeFile(rec)); err != nil || again != rec {
				t.Fatalf("re-encode of %+v: %+v, %v", rec, again, err)
			}
		}
	})
}

var testID = Identity{Model: "fake", WeightsHash: "abc", Dim: 8, Preprocess: "p1", EXIF: true}

func vec(seed uint64, dim int) []float32 {
	r := rand.New(rand.NewPCG(seed, 9))
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func hashOf(s string) Hash { return sha256.Sum256([]byte(s)) }

func openW(t *testing.T, path string) *Writer {
	t.Helper()
	w, err := OpenWriter(path, testID, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeW(t, w) })
	return w
}

// closeW closes w (again: a second Close does nothing) or fails the test.
func closeW(t testing.TB, w *Writer) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Errorf("close writer of %s: %v", w.Path(), err)
	}
}

// commit commits b or fails the test.
func commit(t testing.TB, w *Writer, b *Batch) {
	t.Helper()
	if err := w.Commit(b); err != nil {
		t.Fatalf("commit to %s: %v", w.Path(), err)
	}
}

// gc runs w.GC and returns how many vectors it freed, or fails the test.
func gc(t testing.TB, w *Writer) int {
	t.Helper()
	n, err := w.GC()
	if err != nil {
		t.Fatalf("GC of %s: %v", w.Path(), err)
	}
	return n
}

// stats returns s.Stats() or fails the test.
func stats(t testing.TB, s *Snapshot) Stats {
	t.Helper()
	st, err := s.Stats()
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st
}

// file returns the record of path (ok false when there is none) or fails
// the test.
func file(t testing.TB, s *Snapshot, path string) (File, bool) {
	t.Helper()
	f, ok, err := s.File(path)
	if err != nil {
		t.Fatalf("file %s: %v", path, err)
	}
	return f, ok
}

// paths lists the records under root, in order, or fails the test.
func paths(t testing.TB, s *Snapshot, root string) []string {
	t.Helper()
	var got []string
	if err := s.Files(root, func(p string, _ File) error { got = append(got, p); return nil }); err != nil {
		t.Fatalf("files under %q: %v", root, err)
	}
	return got
}

func view(t *testing.T, path string, fn func(s *Snapshot)) {
	t.Helper()
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("close reader of %s: %v", path, err)
		}
	}()
	if err := r.View(func(s *Snapshot) error { fn(s); return nil }); err != nil {
		t.Fatal(err)
	}
}

func mustCheck(t *testing.T, path string, allowQueued bool) {
	t.Helper()
	view(t, path, func(s *Snapshot) {
		if err := s.Check(allowQueued); err != nil {
			t.Fatalf("check: %v", err)
		}
	})
}

func TestCommitReuseDeleteGC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Size: 1, Hash: hashOf("A")}, vec(1, 8))
	b.Put("/p/b.jpg", File{Size: 1, Hash: hashOf("B")}, vec(2, 8))
	b.Put("/p/a-copy.jpg", File{Size: 1, Hash: hashOf("A")}, nil) // reuse by hash
	b.Put("/p/bad.jpg", File{Size: 0, Err: "empty file"}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, path, false)
	var idA VecID
	view(t, path, func(s *Snapshot) {
		if st := stats(t, s); st.Images != 3 || st.Failed != 1 || st.Vectors != 2 {
			t.Errorf("stats %+v, want 3 images, 1 failed, 2 vectors", st)
		}
		fa, _ := file(t, s, "/p/a.jpg")
		fc, _ := file(t, s, "/p/a-copy.jpg")
		if fa.Vec == 0 || fa.Vec != fc.Vec {
			t.Errorf("duplicate content got vectors %d and %d", fa.Vec, fc.Vec)
		}
		idA = fa.Vec
		if got := s.Paths(fa.Vec); !slices.Equal(got, []string{"/p/a-copy.jpg", "/p/a.jpg"}) {
			t.Errorf("paths %v", got)
		}
		v := s.Vector(fa.Vec)
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("stored vector norm² %g", n)
		}
	})

	// Unknown content without a vector is refused, atomically.
	b.Reset()
	b.Put("/p/c.jpg", File{Hash: hashOf("C2")}, vec(5, 8))
	b.Put("/p/d.jpg", File{Hash: hashOf("nope")}, nil)
	if err := w.Commit(&b); !errors.Is(err, ErrNoVector) {
		t.Fatalf("commit err %v, want ErrNoVector", err)
	}
	view(t, path, func(s *Snapshot) {
		if _, ok := file(t, s, "/p/c.jpg"); ok {
			t.Error("failed commit left a record behind")
		}
	})

	// Delete both users of A: the vector is queued, then freed by GC, and its
	// slot is reused by the next new vector.
	b.Reset()
	b.Delete("/p/a.jpg")
	b.Delete("/p/a-copy.jpg")
	b.Delete("/p/bad.jpg")
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, path, true)
	view(t, path, func(s *Snapshot) {
		if s.Check(false) == nil {
			t.Error("check without allowQueued accepted a queued orphan")
		}
	})
	if n, err := w.GC(); err != nil || n != 1 {
		t.Fatalf("GC = %d, %v; want 1", n, err)
	}
	mustCheck(t, path, false)
	b.Reset()
	b.Put("/p/e.jpg", File{Hash: hashOf("E")}, vec(7, 8))
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	view(t, path, func(s *Snapshot) {
		f, _ := file(t, s, "/p/e.jpg")
		if f.Vec != idA {
			t.Errorf("new vector got id %d, want freed slot %d", f.Vec, idA)
		}
		if st := stats(t, s); st.Images != 2 || st.Failed != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	mustCheck(t, path, false)
}

func TestModifiedFileMovesToNewVector(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/a", File{Hash: hashOf("1")}, vec(1, 8))
	commit(t, w, &b)
	b.Reset()
	b.Put("/a", File{Hash: hashOf("2")}, vec(2, 8))
	b.Put("/b", File{Hash: hashOf("1")}, nil) // reuse the vector /a just dropped
	commit(t, w, &b)
	if n := gc(t, w); n != 0 {
		t.Errorf("GC freed %d vectors still in use", n)
	}
	b.Reset()
	b.Put("/a", File{Err: "corrupt"}, nil) // a modified file that now fails
	commit(t, w, &b)
	if n := gc(t, w); n != 1 {
		t.Errorf("GC freed %d, want 1", n)
	}
	mustCheck(t, path, false)
}

func TestIdentityMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/a", File{Hash: hashOf("1")}, vec(1, 8))
	commit(t, w, &b)
	closeW(t, w)
	for _, tc := range []struct {
		name string
		mod  func(*Identity)
	}{
		{"model", func(i *Identity) { i.Model, i.WeightsHash = "other", "" }},
		{"dim", func(i *Identity) { i.Dim = 16 }},
		{"preprocess", func(i *Identity) { i.Preprocess = "p2" }},
		{"exif", func(i *Identity) { i.EXIF = false }},
		{"weights", func(i *Identity) { i.WeightsHash = "def" }},
	} {
		id := testID
		tc.mod(&id)
		w, err := OpenWriter(path, id, WriterOptions{})
		if !errors.Is(err, ErrModelMismatch) {
			t.Errorf("%s: err %v, want ErrModelMismatch", tc.name, err)
		}
		if err == nil {
			closeW(t, w)
		}
	}
	id := testID
	id.Dim = 4
	w2, err := OpenWriter(path, id, WriterOptions{Reindex: true})
	if err != nil {
		t.Fatal(err)
	}
	closeW(t, w2)
	view(t, path, func(s *Snapshot) {
		if st := stats(t, s); st.Images != 0 || s.Dim() != 4 {
			t.Errorf("reindex kept %d images, dim %d", st.Images, s.Dim())
		}
	})
	mustCheck(t, path, false)
}

func TestBuildLockAndReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if _, err := OpenReader(path, ReaderOptions{}); !errors.Is(err, ErrNoIndex) {
		t.Errorf("reader on missing file: %v, want ErrNoIndex", err)
	}
	w := openW(t, path)
	if w2, err := OpenWriter(path, testID, WriterOptions{}); !errors.Is(err, ErrBuildRunning) {
		t.Errorf("second writer: %v, want ErrBuildRunning", err)
		if err == nil {
			closeW(t, w2)
		}
	}
	// A reader opens fine while the build holds its lock between commits.
	var b Batch
	b.Put("/a", File{Hash: hashOf("1")}, vec(1, 8))
	commit(t, w, &b)
	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// ...and the build can still commit while the reader is open only if the
	// reader is closed in time; here we close it first.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Put("/b", File{Hash: hashOf("2")}, vec(2, 8))
	commit(t, w, &b)
	closeW(t, w)
	w2, err := OpenWriter(path, testID, WriterOptions{})
	if err != nil {
		t.Fatalf("writer after close: %v", err)
	}
	closeW(t, w2)
}

func TestFilesUnder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	for i, p := range []string{"/ph", "/ph-2/x", "/ph/a", "/ph/sub/b", "/ph.old/c", "/phz"} {
		b.Put(p, File{Hash: hashOf(p)}, vec(uint64(i), 8))
	}
	commit(t, w, &b)
	view(t, path, func(s *Snapshot) {
		if got, want := paths(t, s, "/ph"), []string{"/ph", "/ph/a", "/ph/sub/b"}; !slices.Equal(got, want) {
			t.Errorf("Files(/ph) = %v, want %v", got, want)
		}
	})
}

// TestQueuedVectorLeavesLiveSet: a vector that lost its last file is not
// live (searches skip it) until a file reuses it, in a later commit or the
// same one.
func TestQueuedVectorLeavesLiveSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	b.Put("/a", File{Hash: hashOf("1")}, vec(1, 8))
	b.Put("/b", File{Hash: hashOf("2")}, vec(2, 8))
	commit(t, w, &b)
	live := func() (n int) {
		view(t, path, func(s *Snapshot) {
			cs, err := s.Chunks()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				n += c.LiveCount()
			}
		})
		return n
	}
	b.Reset()
	b.Delete("/a")
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, path, true)
	if n := live(); n != 1 {
		t.Errorf("%d live vectors after deleting /a, want 1", n)
	}
	// A query by its content still finds its values (no model needed).
	view(t, path, func(s *Snapshot) {
		want, _ := normalized(vec(1, 8), 8)
		if id, v := s.VectorByHash(hashOf("1")); id == 0 || !slices.Equal(v, want) {
			t.Errorf("queued vector: id %d, values %v; want its id and values", id, v)
		}
	})
	b.Reset()
	b.Put("/c", File{Hash: hashOf("1")}, nil) // reuse the queued vector
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 2 {
		t.Errorf("%d live vectors after reuse, want 2", n)
	}
	mustCheck(t, path, false)
	view(t, path, func(s *Snapshot) {
		f, _ := file(t, s, "/c")
		want, err := normalized(vec(1, 8), 8)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Vector(f.Vec); !slices.Equal(got, want) {
			t.Errorf("revived vector %v, want %v", got, want)
		}
	})
}

func TestForget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if _, err := Forget(path, []string{"/x"}, WriterOptions{}); !errors.Is(err, ErrNoIndex) {
		t.Errorf("forget without an index: %v, want ErrNoIndex", err)
	}
	w := openW(t, path)
	var b Batch
	b.Put("/old/a", File{Hash: hashOf("A")}, vec(1, 8))
	b.Put("/old/sub/b", File{Hash: hashOf("B")}, vec(2, 8))
	b.Put("/old/bad", File{Err: "corrupt"}, nil)
	b.Put("/keep/a-copy", File{Hash: hashOf("A")}, nil)
	b.Put("/old2/c", File{Hash: hashOf("C")}, vec(3, 8))
	b.Put("/single", File{Hash: hashOf("D")}, vec(4, 8))
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := Forget(path, []string{"/old"}, WriterOptions{}); !errors.Is(err, ErrBuildRunning) {
		t.Errorf("forget during a build: %v, want ErrBuildRunning", err)
	}
	closeW(t, w)
	n, err := Forget(path, []string{"/old", "/old/sub", "/single", "/nothing/here"}, WriterOptions{})
	if err != nil || n != 4 {
		t.Fatalf("Forget = %d, %v; want 4 records", n, err)
	}
	mustCheck(t, path, false) // no vector left queued: freed at once
	view(t, path, func(s *Snapshot) {
		if left, want := paths(t, s, ""), []string{"/keep/a-copy", "/old2/c"}; !slices.Equal(left, want) {
			t.Errorf("left %v, want %v", left, want)
		}
		if st := stats(t, s); st.Images != 2 || st.Failed != 0 || st.Vectors != 2 {
			t.Errorf("stats %+v, want 2 images, 0 failed, 2 vectors", st)
		}
	})
}

func TestCompatible(t *testing.T) {
	base := Identity{Model: "/models/hf-clip", WeightsHash: "abc", Arch: "image gelu", Dim: 8, Preprocess: "p1", EXIF: true}
	for _, tc := range []struct {
		name     string
		mod      func(*Identity)
		textOnly bool
		want     string // "" = compatible; else a part of the error
	}{
		{"same", func(*Identity) {}, false, ""},
		{"same weights in another folder", func(i *Identity) { i.Model = "/bundles/clip.taconite" }, false, ""},
		{"other weights, same name", func(i *Identity) { i.WeightsHash = "def" }, false, "weights"},
		{"other weights and name", func(i *Identity) { i.WeightsHash, i.Model = "def", "x" }, false, "weights"},
		{"no hash, other name", func(i *Identity) { i.WeightsHash, i.Model = "", "x" }, false, "model"},
		{"no hash, same name", func(i *Identity) { i.WeightsHash = "" }, false, ""},
		{"dim", func(i *Identity) { i.Dim = 16 }, false, "dimension"},
		{"exif", func(i *Identity) { i.EXIF = false }, false, "--exif=true"},
		{"exif ignored for text", func(i *Identity) { i.EXIF = false }, true, ""},
		{"preprocess", func(i *Identity) { i.Preprocess = "p2" }, false, "preprocessing"},
		// The configuration beside the weights (a quick_gelu/gelu mix-up)
		// is compared when both sides record it.
		{"arch", func(i *Identity) { i.Arch = "image quick_gelu" }, false, "configuration"},
		{"arch, text query", func(i *Identity) { i.Arch = "image quick_gelu" }, true, "--model"},
		{"arch unknown to the query", func(i *Identity) { i.Arch = "" }, false, ""},
		// How the weights are held is not the model: --weights f16 keeps
		// the stored weights' hash, and indexes accept either setting.
		{"rounded at load", func(i *Identity) { i.Weights = "f16" }, false, ""},
		{"rounded, text query", func(i *Identity) { i.Weights = "f16" }, true, ""},
		{"rounded, other model", func(i *Identity) { i.WeightsHash, i.Weights, i.Model = "rnd", "f16", "x" }, false, "--model"},
	} {
		want := base
		tc.mod(&want)
		err := base.Compatible(want, tc.textOnly)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want compatible", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrModelMismatch) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want ErrModelMismatch mentioning %q", tc.name, err, tc.want)
		}
	}
	// An index built with rounded weights accepts the stored weights.
	rounded := base
	rounded.Weights = "f16"
	if err := rounded.Compatible(base, false); err != nil {
		t.Errorf("rounded index, stored weights: %v", err)
	}
	// An index written before the configuration was recorded accepts one.
	old := base
	old.Arch = ""
	if err := old.Compatible(base, false); err != nil {
		t.Errorf("index without a recorded configuration: %v", err)
	}
	// An EXIF-only difference points at --exif and --reindex, not --model.
	other := base
	other.EXIF = false
	if err := base.Compatible(other, false); err == nil || strings.Contains(err.Error(), "--model") || !strings.Contains(err.Error(), "--reindex") {
		t.Errorf("EXIF mismatch message: %v", err)
	}
}

// TestVectorsCounter: Stats.Vectors comes from a meta counter kept by
// commits and GC (no scan of the vecs bucket), and an index written before
// the counter existed gets it counted at its next commit.
func TestVectorsCounter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	counter := func() (meta uint64, present bool, vectors int) {
		view(t, path, func(s *Snapshot) {
			v := s.tx.Bucket(bMeta).Get(kVectors)
			meta, present = getU64(v), v != nil
			vectors = stats(t, s).Vectors
		})
		return
	}
	var b Batch
	b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
	b.Put("/p/b", File{Hash: hashOf("B")}, vec(2, 8))
	b.Put("/p/a2", File{Hash: hashOf("A")}, nil) // same content: no new vector
	commit(t, w, &b)
	if m, ok, st := counter(); !ok || m != 2 || st != 2 {
		t.Errorf("after 2 vectors: counter %d (present %v), Stats %d", m, ok, st)
	}
	b.Reset()
	b.Delete("/p/b")
	commit(t, w, &b)
	gc(t, w)
	if m, ok, st := counter(); !ok || m != 1 || st != 1 {
		t.Errorf("after GC: counter %d (present %v), Stats %d", m, ok, st)
	}
	mustCheck(t, path, false)

	// An index from before the counter.
	if err := w.update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Delete(kVectors) }); err != nil {
		t.Fatal(err)
	}
	if _, ok, st := counter(); ok || st != 1 {
		t.Errorf("without the counter: present %v, Stats %d (want 1 by counting)", ok, st)
	}
	b.Reset()
	b.Put("/p/c", File{Hash: hashOf("C")}, vec(3, 8))
	commit(t, w, &b)
	if m, ok, st := counter(); !ok || m != 2 || st != 2 {
		t.Errorf("legacy index after a commit: counter %d (present %v), Stats %d", m, ok, st)
	}
	mustCheck(t, path, false)
}

// TestNormalize: the one vector check of the tree (store, search and index
// use it): finite non-zero vectors come back unit length, computed in
// float64 so that float32 extremes neither overflow nor underflow; NaN,
// infinities and zero vectors are ErrBadVector.
func TestNormalize(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tc := range []struct {
		name string
		in   []float32
		want []float32 // nil: ErrBadVector
	}{
		{"unit already", []float32{0, 1, 0}, []float32{0, 1, 0}},
		{"3-4-5", []float32{3, -4}, []float32{0.6, -0.8}},
		{"float32 max", []float32{math.MaxFloat32, math.MaxFloat32}, []float32{1 / math.Sqrt2, 1 / math.Sqrt2}},
		{"subnormal", []float32{1e-45, 0}, []float32{1, 0}},
		{"NaN", []float32{1, nan}, nil},
		{"infinite", []float32{-inf, 1}, nil},
		{"zero", []float32{0, 0, 0}, nil},
		{"empty", nil, nil},
	} {
		got, err := Normalize(tc.in)
		if tc.want == nil {
			if !errors.Is(err, ErrBadVector) {
				t.Errorf("%s: %v, %v; want ErrBadVector", tc.name, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v, %v", tc.name, got, err)
			continue
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-7 {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				break
			}
		}
		if &got[0] == &tc.in[0] {
			t.Errorf("%s: returned its input, want a copy", tc.name)
		}
	}
}

// statsAt reads the Stats of the index at path.
func statsAt(t *testing.T, path string) (st Stats) {
	t.Helper()
	view(t, path, func(s *Snapshot) { st = stats(t, s) })
	return st
}

// TestStatsQueued: a vector that lost its last file stays stored until GC
// (a build killed before its GC leaves many); Stats reports it as Queued
// so that status does not count it among the distinct images.
func TestStatsQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	statsNow := func() Stats { return statsAt(t, path) }
	var b Batch
	b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
	b.Put("/p/b", File{Hash: hashOf("B")}, vec(2, 8))
	b.Put("/p/c", File{Hash: hashOf("C")}, vec(3, 8))
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Delete("/p/b")
	b.Put("/p/c", File{Hash: hashOf("C2")}, vec(4, 8)) // changed: C is queued
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if st := statsNow(); st.Images != 2 || st.Vectors != 4 || st.Queued != 2 {
		t.Errorf("before GC: images %d, vectors %d, queued %d; want 2, 4, 2", st.Images, st.Vectors, st.Queued)
	}
	if _, err := w.GC(); err != nil {
		t.Fatal(err)
	}
	if st := statsNow(); st.Images != 2 || st.Vectors != 2 || st.Queued != 0 {
		t.Errorf("after GC: images %d, vectors %d, queued %d; want 2, 2, 0", st.Images, st.Vectors, st.Queued)
	}
}

// TestGCQueuedBefore: a partial build keeps the vectors that lost their
// last file recently (the file may come back under another name), frees
// those queued earlier, and counts a queue entry without a time (an index
// written before entries had one) as old. A kept vector serves a new file
// with its content.
func TestGCQueuedBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	statsNow := func() Stats { return statsAt(t, path) }
	var b Batch
	for i, n := range []string{"a", "b", "c", "d"} {
		b.Put("/p/"+n, File{Hash: hashOf(n)}, vec(uint64(i+1), 8))
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Delete("/p/a")
	b.Delete("/p/b")
	b.Delete("/p/c")
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	var old VecID
	view(t, path, func(s *Snapshot) { old, _ = s.VectorByHash(hashOf("a")) })
	if err := w.update(func(tx *bolt.Tx) error { return tx.Bucket(bGC).Put(u64(uint64(old)), nil) }); err != nil {
		t.Fatal(err)
	}
	if n, err := w.GCQueuedBefore(time.Now().Add(-time.Hour)); err != nil || n != 1 {
		t.Fatalf("GC of entries queued an hour ago: %d freed, %v; want the one without a time", n, err)
	}
	if st := statsNow(); st.Vectors != 3 || st.Queued != 2 {
		t.Errorf("vectors %d, queued %d; want 3, 2", st.Vectors, st.Queued)
	}
	mustCheck(t, path, true)

	b.Reset()
	b.Put("/q/b", File{Hash: hashOf("b")}, nil) // b moved: no vector given, the kept one serves
	if err := w.Commit(&b); err != nil {
		t.Fatalf("a file with a kept vector's content: %v", err)
	}
	if n, err := w.GCQueuedBefore(time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("GC of everything queued: %d freed, %v; want c alone (b is used again)", n, err)
	}
	if st := statsNow(); st.Images != 2 || st.Vectors != 2 || st.Queued != 0 {
		t.Errorf("images %d, vectors %d, queued %d; want 2, 2, 0", st.Images, st.Vectors, st.Queued)
	}
	mustCheck(t, path, false)
	view(t, path, func(s *Snapshot) {
		id, v := s.VectorByHash(hashOf("b"))
		if id == 0 || v == nil || !slices.Equal(s.Paths(id), []string{"/q/b"}) {
			t.Errorf("b's vector %d (%d values) held by %v, want /q/b's", id, len(v), s.Paths(id))
		}
	})
}

// TestArchRecordedAtNextBuild: an index written before the model's
// configuration was part of its identity takes it at its next build and
// from then on refuses a model whose configuration differs.
func TestArchRecordedAtNextBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	id := testID
	id.Arch = ""
	w, err := OpenWriter(path, id, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Put("/a", File{Hash: hashOf("1")}, vec(1, 8))
	commit(t, w, &b)
	closeW(t, w)

	id.Arch = "image gelu eps 1e-05 heads 4"
	w, err = OpenWriter(path, id, WriterOptions{})
	if err != nil {
		t.Fatalf("index without a configuration, model with one: %v", err)
	}
	closeW(t, w)
	view(t, path, func(s *Snapshot) {
		if got := s.Identity(); got.Arch != id.Arch || got.Model != id.Model || got.WeightsHash != id.WeightsHash {
			t.Errorf("identity after the build %+v, want the configuration %q recorded", got, id.Arch)
		}
		if _, ok, err := s.File("/a"); !ok || err != nil {
			t.Errorf("/a after the build: found %v, %v; want it kept", ok, err)
		}
	})
	other := id
	other.Arch = "image quick_gelu eps 1e-05 heads 4"
	if w, err := OpenWriter(path, other, WriterOptions{}); !errors.Is(err, ErrModelMismatch) {
		if err == nil {
			closeW(t, w)
		}
		t.Errorf("other configuration: err %v, want ErrModelMismatch", err)
	}
}
