package index

import (
	"context"
	"crypto/sha256"
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

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

func TestClassify(t *testing.T) {
	h1, h2 := store.Hash{1}, store.Hash{2}
	ok := &store.File{Size: 10, MtimeNs: 100, Hash: h1, Vec: 3}
	failed := &store.File{Size: 10, MtimeNs: 100, Hash: h1, Err: "corrupt", Kind: store.FailCorrupt, Reach: "jpeg,png"}
	format := &store.File{Size: 10, MtimeNs: 100, Hash: h1, Err: "unsupported: HEIC", Kind: store.FailFormat, Reach: "jpeg,png"}
	large := &store.File{Size: 10, MtimeNs: 100, Hash: h1, Err: "too large", Kind: store.FailTooLarge, Reach: "jpeg,png"}
	v1 := &store.File{Size: 10, MtimeNs: 100, Hash: h1, Err: "unsupported: HEIC"} // written before kinds
	knownOnly := func(k ...store.Hash) func(store.Hash) bool {
		return func(h store.Hash) bool { return slices.Contains(k, h) }
	}
	same := retryRule{reach: []string{"jpeg", "png"}}
	more := retryRule{reach: []string{"heic", "jpeg", "png"}}
	less := retryRule{reach: []string{"jpeg"}}
	all := retryRule{all: true, reach: []string{"jpeg", "png"}}
	for _, tc := range []struct {
		name        string
		old         *store.File
		size, mtime int64
		hash        *store.Hash
		known       func(store.Hash) bool
		retry       retryRule
		want        action
	}{
		{"new file", nil, 10, 100, nil, nil, same, actNeedHash},
		{"same size and mtime", ok, 10, 100, nil, nil, same, actUnchanged},
		{"same size and mtime, retry all: only failures", ok, 10, 100, nil, nil, all, actUnchanged},
		{"failed, unchanged stat: not retried", failed, 10, 100, nil, nil, same, actUnchanged},
		{"corrupt, unchanged stat, reach grew: retried (the decoder may read it now)", failed, 10, 100, nil, nil, more, actNeedHash},
		{"too large, unchanged stat, reach grew: not retried", large, 10, 100, nil, nil, more, actUnchanged},
		{"failed, unchanged stat, retry all", failed, 10, 100, nil, nil, all, actNeedHash},
		{"format failure, same reach", format, 10, 100, nil, nil, same, actUnchanged},
		{"format failure, reach grew", format, 10, 100, nil, nil, more, actNeedHash},
		{"format failure, reach shrank", format, 10, 100, nil, nil, less, actUnchanged},
		{"failure written before kinds: retried once", v1, 10, 100, nil, nil, same, actNeedHash},
		{"mtime changed", ok, 10, 101, nil, nil, same, actNeedHash},
		{"size changed", ok, 11, 100, nil, nil, same, actNeedHash},
		{"mtime changed, same content", ok, 10, 101, &h1, knownOnly(h1), same, actTouch},
		{"content changed, new", ok, 10, 101, &h2, knownOnly(h1), same, actEmbed},
		{"content changed to known content", ok, 10, 101, &h2, knownOnly(h1, h2), same, actReuse},
		{"new file, known content (rename/copy)", nil, 10, 100, &h1, knownOnly(h1), same, actReuse},
		{"new file, new content", nil, 10, 100, &h2, knownOnly(h1), same, actEmbed},
		{"failed file touched, same content: retried", failed, 10, 101, &h1, knownOnly(), same, actEmbed},
		{"format failure retried, same content: decoded again", format, 10, 100, &h1, knownOnly(), more, actEmbed},
	} {
		if got := classify(tc.old, found{size: tc.size, mtimeNs: tc.mtime}, tc.hash, tc.known, tc.retry); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// The ctime: a file rewritten with its size and mtime put back.
	withCtime := &store.File{Size: 10, MtimeNs: 100, CtimeNs: 500, Hash: h1, Vec: 3}
	for _, tc := range []struct {
		name  string
		old   *store.File
		ctime int64
		hash  *store.Hash
		want  action
		stamp bool
	}{
		{"same size, mtime and ctime", withCtime, 500, nil, actUnchanged, false},
		{"ctime moved, size and mtime put back (exiftool -P)", withCtime, 501, nil, actNeedHash, false},
		{"ctime moved, same content (chmod)", withCtime, 501, &h1, actTouch, false},
		{"ctime moved, another file's content (two files swapped)", withCtime, 501, &h2, actReuse, false},
		{"a record written without a ctime takes the file's", ok, 501, nil, actUnchanged, true},
		{"a system without ctimes", withCtime, 0, nil, actUnchanged, false},
	} {
		st := found{size: 10, mtimeNs: 100, ctimeNs: tc.ctime}
		if got := classify(tc.old, st, tc.hash, knownOnly(h1, h2), same); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if got := stampsCtime(tc.old, st); got != tc.stamp {
			t.Errorf("%s: stamps the ctime %v, want %v", tc.name, got, tc.stamp)
		}
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// symlink, rename and removeAll change the test tree or fail the test.
func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func rename(t testing.TB, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t testing.TB, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

const png = "\x89PNG\r\n\x1a\n"

func TestWalk(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"b/2.JPG", "b/1.png", "a.jpeg", "c/x.Tiff", "notes.txt", ".hidden.jpg",
		".cache/a.jpg", "@eaDir/t.jpg", "b/._1.png", "b/.DS_Store", "Thumbs.db", "e/.thumbnails/t.png", "h.HEIC"} {
		write(t, filepath.Join(d, p), png)
	}
	// A loop (b/loop → d), a link to a sibling folder and a dangling link.
	symlink(t, d, filepath.Join(d, "b", "loop"))
	symlink(t, filepath.Join(d, "c"), filepath.Join(d, "linkc"))
	symlink(t, filepath.Join(d, "nope"), filepath.Join(d, "z.jpg"))
	got, err := Walk(context.Background(), []string{d, filepath.Join(d, "b")})
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, p := range got {
		if !filepath.IsAbs(p) {
			t.Errorf("%s is not absolute", p)
		}
		r, err := filepath.Rel(d, p)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, r)
	}
	// c is reached first through its real name; linkc is the same folder.
	want := []string{"a.jpeg", "b/1.png", "b/2.JPG", "c/x.Tiff", "h.HEIC"}
	if !slices.Equal(rel, want) {
		t.Errorf("walk = %q\nwant %q", rel, want)
	}
}

// fakes: pixels are 8 floats derived from the content hash; the encoder
// maps them to a vector by a fixed affine map, so every file's expected
// vector is known independently of the order it was processed in.
const dim = 8

func fakePixels(data []byte) []float32 {
	h := sha256.Sum256(data)
	p := make([]float32, dim)
	for i := range p {
		p[i] = float32(h[i]) - 127.5
	}
	return p
}

// fakePre fails like preprocess.Processor.Bytes: only "PNG" content (the
// png signature) decodes; a HEIF header is unsupported.
func fakePre(data []byte, path string) ([]float32, error) {
	switch {
	case strings.HasPrefix(string(data), "\x00\x00\x00\x18ftypheic"):
		return nil, fmt.Errorf("decode %s: %w: HEIC/HEIF", path, ErrUnsupported)
	case !strings.HasPrefix(string(data), png):
		return nil, fmt.Errorf("decode %s: %w", path, ErrNotImage)
	}
	if strings.Contains(string(data), "SHORT") { // a decoder bug
		return fakePixels(data)[:dim/2], nil
	}
	if strings.Contains(string(data), "CORRUPT") {
		return nil, fmt.Errorf("decode %s: %w: corrupt image data", path, preprocess.ErrCorrupt)
	}
	return fakePixels(data), nil
}

type fakeEnc struct {
	images atomic.Int64
	calls  atomic.Int64
	delay  time.Duration
	failOn float32 // a pass containing a first pixel equal to this fails
}

func (e *fakeEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	e.calls.Add(1)
	if len(pix) != n*dim {
		return nil, fmt.Errorf("bad input %d for %d", len(pix), n)
	}
	time.Sleep(e.delay)
	out := make([]float32, len(pix))
	for i := range n {
		if e.failOn != 0 && pix[i*dim] == e.failOn {
			return nil, errors.New("device hiccup")
		}
		for j := range dim {
			out[i*dim+j] = 2*pix[i*dim+j] + float32(j)
		}
	}
	e.images.Add(int64(n))
	return out, nil
}

func expectVec(data []byte) []float32 {
	p := fakePixels(data)
	v := make([]float32, dim)
	var s float64
	for j := range v {
		v[j] = 2*p[j] + float32(j)
		s += float64(v[j]) * float64(v[j])
	}
	for j := range v {
		v[j] = float32(float64(v[j]) / math.Sqrt(s))
	}
	return v
}

var fakeID = store.Identity{Model: "fake", Dim: dim, Preprocess: "fake1"}

func opts(e *fakeEnc) Options {
	return Options{Encoder: e, Preprocess: fakePre, Identity: fakeID, BatchSize: 3, CommitEvery: 5}
}

// verify checks the index invariants and that every indexed file's vector
// is the one computed from its own current content.
func verify(t *testing.T, db string) (images, failed int) {
	t.Helper()
	if err := store.Check(db); err != nil {
		t.Fatalf("index check: %v", err)
	}
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("close %s: %v", db, err)
		}
	}()
	err = r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error {
			if f.Failed() {
				failed++
				return nil
			}
			images++
			data, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("%s indexed but unreadable: %v", p, err)
				return nil
			}
			want, got := expectVec(data), s.Vector(f.Vec)
			for i := range want {
				if math.Abs(float64(want[i]-got[i])) > 1e-6 {
					t.Errorf("%s has the vector of other content", p)
					break
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("read %s: %v", db, err)
	}
	return images, failed
}

func sumOf(s *Summary) string {
	return fmt.Sprintf("added=%d updated=%d unchanged=%d reused=%d removed=%d failed=%d",
		s.Added, s.Updated, s.Unchanged, s.Reused, s.Removed, s.Failed)
}

func TestBuildIncremental(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 10 {
		write(t, filepath.Join(d, fmt.Sprintf("p%02d.jpg", i)), fmt.Sprintf("%simage %d", png, i))
	}
	write(t, filepath.Join(d, "sub", "copy.png"), png+"image 3") // duplicate content in the same run
	write(t, filepath.Join(d, "bad.jpg"), png+"CORRUPT")
	write(t, filepath.Join(d, "empty.jpg"), "")
	write(t, filepath.Join(d, "text.jpg"), "just text")
	write(t, filepath.Join(d, "phone.heic"), "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00")
	write(t, filepath.Join(d, ".hidden.jpg"), png+"hidden")
	enc := &fakeEnc{}

	var events []Event
	var errs []string
	o := opts(enc)
	o.Progress = func(e Event) { events = append(events, e) }
	o.OnError = func(p string, err error) { errs = append(errs, filepath.Base(p)) }
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=10 updated=0 unchanged=0 reused=1 removed=0 failed=4"; got != want {
		t.Errorf("first build: %s, want %s", got, want)
	}
	if enc.images.Load() != 10 {
		t.Errorf("model ran on %d images, want 10", enc.images.Load())
	}
	reasons := map[string]error{"bad.jpg": nil, "empty.jpg": ErrEmpty, "text.jpg": ErrNotImage, "phone.heic": ErrUnsupported}
	for _, f := range sum.Failures {
		base := filepath.Base(f.Path)
		want, ok := reasons[base]
		if !ok || (want != nil && !strings.Contains(f.Error, want.Error())) {
			t.Errorf("failure %s: %q", base, f.Error)
		}
	}
	slices.Sort(errs)
	if !slices.Equal(errs, []string{"bad.jpg", "empty.jpg", "phone.heic", "text.jpg"}) {
		t.Errorf("OnError saw %v", errs)
	}
	if last := events[len(events)-1]; last.Phase != "done" || last.Done != 15 || last.Total != 15 {
		t.Errorf("last event %+v", last)
	}
	if img, fail := verify(t, db); img != 11 || fail != 4 {
		t.Errorf("index holds %d images, %d failures", img, fail)
	}

	// Nothing changed: no model work, no failure retried.
	enc.images.Store(0)
	sum, err = Build(context.Background(), db, []string{d}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=0 updated=0 unchanged=15 reused=0 removed=0 failed=0"; got != want {
		t.Errorf("re-run: %s, want %s", got, want)
	}
	if enc.images.Load() != 0 {
		t.Errorf("re-run ran the model on %d images", enc.images.Load())
	}

	// Rename, modify, touch, delete, fix a failed file.
	rename(t, filepath.Join(d, "p00.jpg"), filepath.Join(d, "renamed.jpg"))
	write(t, filepath.Join(d, "p01.jpg"), png+"image 1 edited")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(d, "p02.jpg"), later, later); err != nil {
		t.Fatal(err)
	}
	removeAll(t, filepath.Join(d, "p03.jpg"))
	write(t, filepath.Join(d, "bad.jpg"), png+"repaired")
	sum, err = Build(context.Background(), db, []string{d}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sumOf(sum), "added=0 updated=2 unchanged=11 reused=1 removed=2 failed=0"; got != want {
		t.Errorf("after edits: %s, want %s", got, want)
	}
	if enc.images.Load() != 2 {
		t.Errorf("edits ran the model on %d images, want 2 (p01 and bad.jpg)", enc.images.Load())
	}
	if img, fail := verify(t, db); img != 11 || fail != 3 {
		t.Errorf("index holds %d images, %d failures", img, fail)
	}

	// Building a sub-folder never removes files outside it.
	sum, err = Build(context.Background(), db, []string{filepath.Join(d, "sub")}, opts(enc))
	if err != nil || sum.Removed != 0 || sum.Unchanged != 1 {
		t.Errorf("sub-folder build: %s, %v", sumOf(sum), err)
	}
	// Deleting every photo empties the index and frees every vector. (The
	// folder still lists a note: one that lists nothing at all looks like
	// a disk that is away, see TestBuildKeepsEmptyRootOffline.)
	write(t, filepath.Join(d, "notes.txt"), "kept")
	for _, e := range []string{"p01.jpg", "p02.jpg", "p04.jpg", "p05.jpg", "p06.jpg", "p07.jpg", "p08.jpg", "p09.jpg", "renamed.jpg", "bad.jpg", "sub", "empty.jpg", "text.jpg", "phone.heic"} {
		removeAll(t, filepath.Join(d, e))
	}
	sum, err = Build(context.Background(), db, []string{d}, opts(enc))
	if err != nil || sum.Removed != 14 {
		t.Errorf("after deleting all: %s, %v", sumOf(sum), err)
	}
	if img, fail := verify(t, db); img != 0 || fail != 0 {
		t.Errorf("index holds %d images, %d failures after deleting all", img, fail)
	}
}

func TestBuildEncoderFailureStaysWithItsFile(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	var victim string
	for i := range 9 {
		c := fmt.Sprintf("%simage %d", png, i)
		write(t, filepath.Join(d, fmt.Sprintf("p%d.png", i)), c)
		if i == 4 {
			victim = c
		}
	}
	enc := &fakeEnc{failOn: fakePixels([]byte(victim))[0]}
	sum, err := Build(context.Background(), db, []string{d}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 1 || sum.Added != 8 || filepath.Base(sum.Failures[0].Path) != "p4.png" {
		t.Errorf("summary %s %v", sumOf(sum), sum.Failures)
	}
	verify(t, db) // each of the 8 others holds its own vector
}

func TestBuildModelMismatch(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	write(t, filepath.Join(d, "a.png"), png+"a")
	if _, err := Build(context.Background(), db, []string{d}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	o := opts(&fakeEnc{})
	o.Identity.Model = "other"
	_, err := Build(context.Background(), db, []string{d}, o)
	if !errors.Is(err, store.ErrModelMismatch) || !strings.Contains(err.Error(), "--reindex") {
		t.Fatalf("other model: %v", err)
	}
	o.Reindex = true
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil || sum.Added != 1 {
		t.Fatalf("reindex: %v %v", sum, err)
	}
}

// TestReadDuringBuild opens the index read-only after every commit of a
// build, while the build still runs (it waits in the commit hook): readers
// must never wait for the build to end, and each sees a sound index holding
// exactly what was committed so far.
func TestReadDuringBuild(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 40 {
		write(t, filepath.Join(d, fmt.Sprintf("p%02d.png", i)), fmt.Sprintf("%s%d", png, i))
	}
	// Create the index first with one image, so that it exists before the
	// build below commits anything.
	if _, err := Build(context.Background(), db, []string{filepath.Join(d, "p00.png")}, opts(&fakeEnc{})); err != nil {
		t.Fatal(err)
	}
	o := opts(&fakeEnc{})
	o.BatchSize, o.CommitEvery, o.CommitInterval = 2, 2, time.Hour
	var seen []int // images a reader saw after each commit
	failed := false
	o.committed = func(records int) {
		if failed {
			return // once is enough: each try waits for the reader's timeout
		}
		n, err := readDuringBuild(db)
		if err != nil {
			failed = true
			t.Errorf("reader after %d records: %v", records, err)
			return
		}
		if n != 1+records {
			t.Errorf("reader after %d records saw %d images, want %d", records, n, 1+records)
		}
		seen = append(seen, n)
	}
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Added != 39 || sum.Unchanged != 1 {
		t.Errorf("summary %s", sumOf(sum))
	}
	// Readers saw the intermediate states: they ran during the build.
	if len(seen) < 3 || seen[len(seen)-1] != 40 || !slices.IsSorted(seen) {
		t.Errorf("readers saw the image counts %v during the build, want at least 3 rising to 40", seen)
	}
	verify(t, db)
}

// readDuringBuild opens the index read-only, checks it (queued vectors
// allowed: the build has not collected them yet) and counts its images.
func readDuringBuild(db string) (images int, err error) {
	r, err := store.OpenReader(db, store.ReaderOptions{Timeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	err = r.View(func(s *store.Snapshot) error {
		st, err := s.Stats()
		images = st.Images
		if err != nil {
			return err
		}
		return s.Check(true)
	})
	return images, errors.Join(err, r.Close())
}

func TestBuildCancel(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 30 {
		write(t, filepath.Join(d, fmt.Sprintf("p%02d.png", i)), fmt.Sprintf("%s%d", png, i))
	}
	enc := &fakeEnc{delay: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	o := opts(enc)
	o.Progress = func(e Event) {
		if e.Phase == "index" && e.Done == 10 {
			cancel()
		}
	}
	sum, err := Build(ctx, db, []string{d}, o)
	if !errors.Is(err, context.Canceled) || sum == nil || sum.Complete {
		t.Fatalf("cancelled build: %v, %+v", err, sum)
	}
	img, _ := verify(t, db)
	if img < 10 || img >= 30 {
		t.Errorf("cancel kept %d images, want the ≥10 finished and not all", img)
	}
	sum, err = Build(context.Background(), db, []string{d}, opts(&fakeEnc{}))
	if err != nil || sum.Added+sum.Unchanged != 30 || sum.Added != 30-img {
		t.Errorf("resumed build: %s, %v (had %d)", sumOf(sum), err, img)
	}
	verify(t, db)
}

// BenchmarkNoChangeRebuild times a re-run over 10,000 unchanged files, and
// measures its memory per file as BenchmarkRebuildMemory does.
func BenchmarkNoChangeRebuild(b *testing.B) {
	d, db, o := indexedLibrary(b, 10000, 200)
	benchRebuild(b, d, db, o, 10000, false)
}

// brokenEnc fails every pass after the first few images.
type brokenEnc struct {
	fakeEnc
	left int
}

func (e *brokenEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	if e.left < n {
		return nil, errors.New("device lost")
	}
	e.left -= n
	return e.fakeEnc.EncodeImages(pix, n)
}

func TestBuildStopsWhenTheEncoderDies(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 20 {
		write(t, filepath.Join(d, fmt.Sprintf("p%02d.png", i)), fmt.Sprintf("%s%d", png, i))
	}
	o := opts(nil)
	o.Encoder = &brokenEnc{left: 6}
	o.CommitEvery = 100
	sum, err := Build(context.Background(), db, []string{d}, o)
	if !errors.Is(err, ErrEncoder) {
		t.Fatalf("err %v, want ErrEncoder", err)
	}
	if sum == nil || sum.Added != 6 || sum.Failed != 0 {
		t.Errorf("summary %+v", sum)
	}
	if img, fail := verify(t, db); img != 6 || fail != 0 {
		t.Errorf("index holds %d images, %d failures; want the 6 embedded before the failure", img, fail)
	}
}

// BenchmarkBuild1000 times a first build of 1,000 small files with the fake
// encoder: the cost of the pipeline, hashing and commits without a model.
func BenchmarkBuild1000(b *testing.B) {
	d := b.TempDir()
	for i := range 1000 {
		write(b, filepath.Join(d, fmt.Sprintf("p%04d.png", i)), fmt.Sprintf("%s%d", png, i))
	}
	for b.Loop() {
		db := filepath.Join(b.TempDir(), "i.db")
		sum, err := Build(context.Background(), db, []string{d}, Options{Encoder: &fakeEnc{}, Preprocess: fakePre, Identity: fakeID})
		if err != nil || sum.Added != 1000 {
			b.Fatal(sum, err)
		}
	}
}

// TestHoldsRecords: which dangling links had indexed entries under them.
func TestHoldsRecords(t *testing.T) {
	known := []string{"/a/b", "/a/b-c/x.png", "/a/b.d", "/a/bc/y.png", "/a/d/e/f.png", "/m/s.tar#k"}
	for _, tc := range []struct {
		dir  string
		want bool
	}{
		{"/a/b", true},     // the link itself was a file
		{"/a/b-c", true},   // a folder with records
		{"/a/d", true},     // records deeper down
		{"/a/bc/y", false}, // a prefix of a name is not a folder
		{"/a/c", false},
		{"/z", false},
		{"/a/b.", false},
		{"/m/s.tar", true}, // a shard's samples
		{"/m/s", false},
	} {
		if got := holdsRecords(known, tc.dir); got != tc.want {
			t.Errorf("holdsRecords(%s) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

// TestBuildKeepsEntriesBehindUnreachableLinks unmounts (renames away) the
// target of a linked folder and of a linked root: their entries must stay,
// reported as unreachable, not be removed and re-embedded later.
func TestBuildKeepsEntriesBehindUnreachableLinks(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	nas, usb := filepath.Join(d, "nas"), filepath.Join(d, "usb")
	for i := range 3 {
		write(t, filepath.Join(nas, fmt.Sprintf("n%d.png", i)), fmt.Sprintf("%snas %d", png, i))
		write(t, filepath.Join(usb, fmt.Sprintf("u%d.png", i)), fmt.Sprintf("%susb %d", png, i))
	}
	photos := filepath.Join(d, "photos")
	write(t, filepath.Join(photos, "local.png"), png+"local")
	if err := os.Symlink(nas, filepath.Join(photos, "nas")); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(d, "never"), filepath.Join(photos, "dangling.png")) // never indexed: said, as such
	symlink(t, filepath.Join(d, "never"), filepath.Join(photos, "notes.txt"))    // not ours: quiet
	usbRoot := filepath.Join(d, "usbroot")
	symlink(t, usb, usbRoot)
	roots := []string{photos, usbRoot}
	// The link that never led anywhere is said at every build, with its
	// target; the unreachable ones name clipidx forget.
	var reported []string
	o := opts(&fakeEnc{})
	o.OnError = func(p string, err error) {
		switch filepath.Base(p) {
		case "dangling.png":
			if !errors.Is(err, ErrLinkNowhere) || !strings.Contains(err.Error(), "leads to "+filepath.Join(d, "never")) {
				t.Errorf("%s: %v", p, err)
			}
		default:
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "clipidx forget") {
				t.Errorf("%s: %v", p, err)
			}
		}
		reported = append(reported, filepath.Base(p))
	}
	sum, err := Build(context.Background(), db, roots, o)
	if err != nil || sum.Added != 7 {
		t.Fatalf("first build: %v %v", sum, err)
	}
	if !slices.Equal(reported, []string{"dangling.png"}) {
		t.Errorf("first build reported %q, want the link that leads nowhere", reported)
	}
	rename(t, nas, nas+".unmounted")
	rename(t, usb, usb+".unmounted")
	reported = nil
	sum, err = Build(context.Background(), db, roots, o)
	if err != nil || sum.Removed != 0 || sum.Unchanged != 1 {
		t.Fatalf("build with the disks gone: %s, %v", sumOf(sum), err)
	}
	slices.Sort(reported)
	if !slices.Equal(reported, []string{"dangling.png", "nas", "usbroot"}) {
		t.Errorf("reported %q, want the three links", reported)
	}
	rename(t, nas+".unmounted", nas) // remounted: every kept vector is its file's
	rename(t, usb+".unmounted", usb)
	if img, _ := verify(t, db); img != 7 {
		t.Errorf("index holds %d images, want all 7 kept", img)
	}
}

// TestBuildSingleImagePassFailure: with passes of one image, a file the
// encoder rejects fails alone, while a device that dies still stops the
// build (an input that worked before fails too).
func TestBuildSingleImagePassFailure(t *testing.T) {
	d := t.TempDir()
	var victim string
	for i := range 9 {
		c := fmt.Sprintf("%simage %d", png, i)
		write(t, filepath.Join(d, fmt.Sprintf("p%d.png", i)), c)
		if i == 0 { // the first: no earlier input to compare with
			victim = c
		}
	}
	for _, first := range []bool{true, false} {
		if !first {
			victim = png + "image 4"
		}
		o := opts(&fakeEnc{failOn: fakePixels([]byte(victim))[0]})
		o.BatchSize = 1
		db := filepath.Join(t.TempDir(), "i.db")
		sum, err := Build(context.Background(), db, []string{d}, o)
		if err != nil || sum.Failed != 1 || sum.Added != 8 {
			t.Errorf("victim %q: %v, %v", victim, sum, err)
		}
		verify(t, db)
	}
	o := opts(nil)
	o.Encoder, o.BatchSize, o.Workers = &brokenEnc{left: 6}, 1, 1
	db := filepath.Join(t.TempDir(), "i.db")
	sum, err := Build(context.Background(), db, []string{d}, o)
	if !errors.Is(err, ErrEncoder) || sum == nil || sum.Added != 6 || sum.Failed != 0 {
		t.Errorf("dead device, batch 1: %v, %v", sum, err)
	}
}

// TestBuildReportsUnsupportedFormats: camera RAW and JPEG XL files are
// walked and failed as unsupported, naming the format, by the real
// decoder's classification (the index keeps no sniffer of its own).
func TestBuildReportsUnsupportedFormats(t *testing.T) {
	d := t.TempDir()
	files := map[string]struct{ content, kind string }{
		"a.CR2": {"II*\x00\x10\x00\x00\x00CR\x02\x00", "Canon CR2"},
		"b.cr3": {"\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom", "Canon CR3"},
		"c.jxl": {"\xff\x0a\xfa\x7f", "JPEG XL"},
		"d.RAF": {"FUJIFILMCCD-RAW 0201", "Fujifilm RAF"},
		"e.nef": {"MM\x00*\x00\x00\x00\x08\x00\x00", "Nikon NEF"},
		"f.arw": {"II*\x00\x08\x00\x00\x00\x00\x00", "Sony ARW"},
		"g.jxl": {"\x00\x00\x00\x0cJXL \r\n\x87\n", "JPEG XL"},
		"h.jpg": {"just text", "not a recognised image format"},
		// HEIC is decoded now: a bare ftyp box is a damaged file, named.
		"i.heic": {"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00heic", "corrupt image: HEIC"},
	}
	for name, f := range files {
		write(t, filepath.Join(d, name), f.content)
	}
	o := opts(&fakeEnc{})
	o.Preprocess = preprocess.New(preprocess.DefaultConfig(), preprocess.Options{}).Bytes
	sum, err := Build(context.Background(), filepath.Join(t.TempDir(), "i.db"), []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != len(files) {
		t.Errorf("%d failures, want %d: %v", sum.Failed, len(files), sum.Failures)
	}
	for _, f := range sum.Failures {
		want := files[filepath.Base(f.Path)]
		if !strings.Contains(f.Error, want.kind) {
			t.Errorf("%s: %q, want it to name %q", filepath.Base(f.Path), f.Error, want.kind)
		}
		if want.kind != "not a recognised image format" && !strings.HasPrefix(want.kind, "corrupt") && !strings.Contains(f.Error, ErrUnsupported.Error()) {
			t.Errorf("%s: %q is not reported as unsupported", filepath.Base(f.Path), f.Error)
		}
	}
}

// TestBuildOddPixelCountFailsAlone: a decode of the wrong length fails its
// own file, not the other images of its pass, wherever it comes in the pass.
func TestBuildOddPixelCountFailsAlone(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "a.png"), png+"SHORT") // first of the first pass
	for i := range 5 {
		write(t, filepath.Join(d, fmt.Sprintf("p%d.png", i)), fmt.Sprintf("%simage %d", png, i))
	}
	for _, ppi := range []int{dim, 0} {
		o := opts(&fakeEnc{})
		o.Workers, o.PixelsPerImage = 1, ppi // one worker: results arrive in walk order
		db := filepath.Join(t.TempDir(), "i.db")
		sum, err := Build(context.Background(), db, []string{d}, o)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Failed != 1 || sum.Added != 5 || filepath.Base(sum.Failures[0].Path) != "a.png" {
			t.Errorf("PixelsPerImage %d: %s %v", ppi, sumOf(sum), sum.Failures)
		}
		verify(t, db)
	}
}

// TestBuildFailuresSortedByPath: failures are listed by path, not in the
// order they were found (a decode failure is known before an encoder one).
func TestBuildFailuresSortedByPath(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "a.png"), png+"model rejects this")
	write(t, filepath.Join(d, "b.png"), png+"CORRUPT")
	write(t, filepath.Join(d, "c.png"), png+"fine")
	o := opts(&fakeEnc{failOn: fakePixels([]byte(png + "model rejects this"))[0]})
	o.Workers = 1 // a is queued for the encoder, b fails at once, then a
	sum, err := Build(context.Background(), filepath.Join(t.TempDir(), "i.db"), []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range sum.Failures {
		got = append(got, filepath.Base(f.Path))
	}
	if !slices.Equal(got, []string{"a.png", "b.png"}) {
		t.Errorf("failures in order %q, want sorted by path", got)
	}
}

// nanEnc returns a NaN vector for the image whose first pixel is victim.
type nanEnc struct {
	fakeEnc
	victim float32
}

func (e *nanEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	out, err := e.fakeEnc.EncodeImages(pix, n)
	for i := range n {
		if err == nil && pix[i*dim] == e.victim {
			out[i*dim+1] = float32(math.NaN())
		}
	}
	return out, err
}

// TestBuildBadEmbeddingFailsItsFile: a non-finite vector from the encoder
// fails its own file with ErrBadEmbedding and is never stored.
func TestBuildBadEmbeddingFailsItsFile(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 5 {
		write(t, filepath.Join(d, fmt.Sprintf("p%d.png", i)), fmt.Sprintf("%simage %d", png, i))
	}
	o := opts(nil)
	o.Encoder = &nanEnc{victim: fakePixels([]byte(png + "image 2"))[0]}
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 1 || sum.Added != 4 || filepath.Base(sum.Failures[0].Path) != "p2.png" ||
		sum.Failures[0].Error != ErrBadEmbedding.Error() {
		t.Errorf("summary %s %v", sumOf(sum), sum.Failures)
	}
	verify(t, db)
}

// allNaNEnc returns a NaN in every vector: weights that give NaN.
type allNaNEnc struct{ fakeEnc }

func (e *allNaNEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	out, err := e.fakeEnc.EncodeImages(pix, n)
	for i := range n {
		if err == nil {
			out[i*dim] = float32(math.NaN())
		}
	}
	return out, err
}

// TestBuildAllBadEmbeddingsIsTheModel: a model whose every vector of a
// pass is invalid stops the build as a failing model does (ErrEncoder),
// with no file recorded as failed: the next build with a sound model
// indexes them all, without --retry-failed.
func TestBuildAllBadEmbeddingsIsTheModel(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 5 {
		write(t, filepath.Join(d, fmt.Sprintf("p%d.png", i)), fmt.Sprintf("%simage %d", png, i))
	}
	o := opts(nil)
	o.Encoder = &allNaNEnc{}
	sum, err := Build(context.Background(), db, []string{d}, o)
	if !errors.Is(err, ErrEncoder) || !strings.Contains(err.Error(), ErrBadEmbedding.Error()) {
		t.Fatalf("build with a model giving NaN: %v, want %v naming %v", err, ErrEncoder, ErrBadEmbedding)
	}
	if sum != nil && sum.Failed != 0 {
		t.Errorf("summary %s %v: want no file failed", sumOf(sum), sum.Failures)
	}
	sum, err = Build(context.Background(), db, []string{d}, opts(&fakeEnc{}))
	if err != nil || sum.Added != 5 || sum.Failed != 0 {
		t.Fatalf("build with a sound model: %v, %v; want all 5 added", sum, err)
	}
	verify(t, db)
}

// TestReady: Options.Ready runs once, before the first pass, only when
// something needs embedding; its error stops the build with nothing
// recorded as failed, and the next build (Ready succeeding) completes it.
func TestReady(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 5 {
		write(t, filepath.Join(d, fmt.Sprintf("p%02d.png", i)), fmt.Sprintf("%s%d", png, i))
	}
	calls := 0
	enc := &fakeEnc{}
	o := opts(enc)
	o.BatchSize = 2
	o.Ready = func() error { calls++; return errors.New("model folder broken") }
	sum, err := Build(context.Background(), db, []string{d}, o)
	if !errors.Is(err, ErrEncoder) || !strings.Contains(err.Error(), "model folder broken") || calls != 1 {
		t.Fatalf("err %v after %d Ready calls, want ErrEncoder from one call", err, calls)
	}
	if sum == nil || sum.Added != 0 || sum.Failed != 0 || enc.calls.Load() != 0 {
		t.Errorf("summary %+v after %d encoder calls, want nothing added, failed or encoded", sum, enc.calls.Load())
	}
	calls = 0
	o.Ready = func() error { calls++; return nil }
	if sum, err = Build(context.Background(), db, []string{d}, o); err != nil || sum.Added != 5 || calls != 1 {
		t.Fatalf("second build: %+v, %v, %d Ready calls", sum, err, calls)
	}
	calls = 0
	if sum, err = Build(context.Background(), db, []string{d}, o); err != nil || sum.Unchanged != 5 || calls != 0 {
		t.Errorf("no-op build: %+v, %v, %d Ready calls (want none)", sum, err, calls)
	}
}
