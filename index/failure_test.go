package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

const heic = "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00"

// animWebP starts the content of an animated WebP for reachPre.
const animWebP = "RIFF\x00\x00\x00\x00WEBPVP8X"

// reachPre is fakePre that also decodes HEIC content when reach holds
// "heic", as an upgraded decoder would; it counts its calls. It is what a
// build passes as Preprocess together with Options.Reach = reach.
type reachPre struct {
	reach []string
	calls atomic.Int64
}

func (p *reachPre) pre(data []byte, path string) ([]float32, error) {
	p.calls.Add(1)
	if strings.HasPrefix(string(data), heic) && slices.Contains(p.reach, "heic") {
		return fakePixels(data), nil
	}
	if strings.HasPrefix(string(data), animWebP) { // what an older decoder took for damage
		if slices.Contains(p.reach, "webp-anim") {
			return fakePixels(data), nil
		}
		return nil, fmt.Errorf("decode %s: %w: WebP: webp: invalid format", path, preprocess.ErrCorrupt)
	}
	return fakePre(data, path)
}

// buildWith builds d into db with a decoder reading reach, and returns the
// summary and the number of decodes.
func buildWith(t *testing.T, db, d string, enc *fakeEnc, reach []string, edit func(*Options)) (*Summary, int64) {
	t.Helper()
	p := &reachPre{reach: reach}
	o := opts(enc)
	o.Preprocess, o.Reach = p.pre, reach
	if edit != nil {
		edit(&o)
	}
	sum, err := Build(context.Background(), db, []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	return sum, p.calls.Load()
}

// record returns the index's record of path.
func record(t *testing.T, db, path string) (store.File, bool) {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f store.File
	var ok bool
	err = r.View(func(s *store.Snapshot) error {
		f, ok, err = s.File(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, ok
}

// failureTree writes an image, a HEIC photo and a text file named .jpg.
func failureTree(t *testing.T) (d, phone, text string) {
	d = t.TempDir()
	write(t, filepath.Join(d, "a.png"), png+"a")
	phone, text = filepath.Join(d, "phone.heic"), filepath.Join(d, "text.jpg")
	write(t, phone, heic+"pixels")
	write(t, text, "just text")
	return d, phone, text
}

// TestBuildRetriesWhatTheReachNowReads: a HEIC photo that failed under a
// decoder without HEIC is read again, its stat unchanged, by the first
// build whose reach holds "heic", and indexed; a build whose reach did not
// grow reads no failure again.
func TestBuildRetriesWhatTheReachNowReads(t *testing.T) {
	d, phone, _ := failureTree(t)
	db := filepath.Join(t.TempDir(), "i.db")
	enc := &fakeEnc{}
	old := []string{"jpeg", "png"}
	sum, _ := buildWith(t, db, d, enc, old, nil)
	if got, want := sumOf(sum), "added=1 updated=0 unchanged=0 reused=0 removed=0 failed=2"; got != want {
		t.Fatalf("first build: %s, want %s", got, want)
	}
	if f, _ := record(t, db, phone); f.Kind != store.FailFormat || f.Reach != "jpeg,png" || !f.Failed() {
		t.Errorf("HEIC failure recorded as %+v, want kind format and reach jpeg,png", f)
	}
	st, err := os.Stat(phone)
	if err != nil {
		t.Fatal(err)
	}

	// The same reach: nothing is read again.
	sum, calls := buildWith(t, db, d, enc, old, nil)
	if got, want := sumOf(sum), "added=0 updated=0 unchanged=3 reused=0 removed=0 failed=0"; got != want || calls != 0 {
		t.Errorf("same reach: %s with %d decodes, want %s and none", got, calls, want)
	}

	// An upgrade that reads HEIC: both format failures are read again
	// (the text file fails again), the photo is indexed.
	sum, calls = buildWith(t, db, d, enc, []string{"heic", "jpeg", "png"}, nil)
	if got, want := sumOf(sum), "added=0 updated=1 unchanged=1 reused=0 removed=0 failed=1"; got != want || calls != 2 {
		t.Errorf("reach with heic: %s with %d decodes, want %s and 2", got, calls, want)
	}
	if st2, err := os.Stat(phone); err != nil || !st2.ModTime().Equal(st.ModTime()) || st2.Size() != st.Size() {
		t.Fatalf("the photo's stat changed: %v", err)
	}
	if img, fail := verify(t, db); img != 2 || fail != 1 {
		t.Errorf("index holds %d images, %d failures; want 2 and 1", img, fail)
	}
	// Then quiet again.
	if sum, calls = buildWith(t, db, d, enc, []string{"heic", "jpeg", "png"}, nil); sum.Unchanged != 3 || calls != 0 {
		t.Errorf("after the upgrade: %s with %d decodes", sumOf(sum), calls)
	}
}

// TestBuildRetryFailedRetriesAll: Options.RetryFailed reads every failed
// file again, whatever its kind; without it an unchanged failure stays.
func TestBuildRetryFailedRetriesAll(t *testing.T) {
	d, _, _ := failureTree(t)
	write(t, filepath.Join(d, "bad.png"), png+"CORRUPT")
	db := filepath.Join(t.TempDir(), "i.db")
	enc := &fakeEnc{}
	reach := []string{"jpeg", "png"}
	if sum, _ := buildWith(t, db, d, enc, reach, nil); sum.Failed != 3 {
		t.Fatalf("first build: %s, want 3 failures", sumOf(sum))
	}
	if sum, calls := buildWith(t, db, d, enc, reach, nil); sum.Unchanged != 4 || calls != 0 {
		t.Errorf("without RetryFailed: %s with %d decodes, want nothing read", sumOf(sum), calls)
	}
	sum, calls := buildWith(t, db, d, enc, reach, func(o *Options) { o.RetryFailed = true })
	if got, want := sumOf(sum), "added=0 updated=0 unchanged=1 reused=0 removed=0 failed=3"; got != want || calls != 3 {
		t.Errorf("RetryFailed: %s with %d decodes, want %s and 3", got, calls, want)
	}
	// With a decoder that now reads HEIC (its reach not told), only
	// RetryFailed finds it.
	sum, _ = buildWith(t, db, d, enc, reach, func(o *Options) {
		p := &reachPre{reach: []string{"heic"}}
		o.Preprocess, o.RetryFailed = p.pre, true
	})
	if sum.Updated != 1 || sum.Failed != 2 {
		t.Errorf("RetryFailed with a better decoder: %s, want the photo updated", sumOf(sum))
	}
	verify(t, db)
}

// TestBuildDoesNotRecordErrorsThatAreNotTheFiles: an I/O error, a time-out
// or a shortage of memory from the decoder, and an image the encoder fails
// alone, are reported (marked transient) but not recorded: a new file gets
// no record and a changed one keeps its old one, and the next build with a
// working decoder and encoder indexes both without their stat changing.
func TestBuildDoesNotRecordErrorsThatAreNotTheFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error // returned by the decoder for the victims; nil: the encoder fails them
	}{
		{"EIO", fmt.Errorf("read: %w", syscall.EIO)},
		{"decode timed out", fmt.Errorf("decode: %w", context.DeadlineExceeded)},
		{"out of memory", fmt.Errorf("decode: %w", syscall.ENOMEM)},
		{"encoder fails the image alone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			db := filepath.Join(t.TempDir(), "i.db")
			fresh, changed := filepath.Join(d, "fresh.png"), filepath.Join(d, "changed.png")
			write(t, filepath.Join(d, "ok.png"), png+"ok")
			write(t, changed, png+"before")
			if _, err := Build(context.Background(), db, []string{d}, opts(&fakeEnc{})); err != nil {
				t.Fatal(err)
			}
			was, _ := record(t, db, changed)
			write(t, fresh, png+"victim fresh")
			write(t, changed, png+"victim changed")
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(changed, later, later); err != nil {
				t.Fatal(err)
			}

			o := opts(&fakeEnc{})
			o.BatchSize = 1 // each victim fails in a pass of its own: the encoder is not dead
			if tc.err != nil {
				o.Preprocess = func(data []byte, path string) ([]float32, error) {
					if strings.Contains(string(data), "victim") {
						return nil, tc.err
					}
					return fakePre(data, path)
				}
			} else {
				o.Encoder = &victimEnc{}
			}
			sum, err := Build(context.Background(), db, []string{d}, o)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failed != 2 || len(sum.Failures) != 2 || !sum.Failures[0].Transient || !sum.Failures[1].Transient {
				t.Errorf("summary %s %+v, want 2 transient failures", sumOf(sum), sum.Failures)
			}
			if f, ok := record(t, db, fresh); ok {
				t.Errorf("new file recorded as %+v", f)
			}
			if f, _ := record(t, db, changed); f != was {
				t.Errorf("changed file's record is %+v, want the old %+v", f, was)
			}
			if err := store.Check(db); err != nil {
				t.Fatal(err)
			}

			sum, err = Build(context.Background(), db, []string{d}, opts(&fakeEnc{}))
			if got, want := sumOf(sum), "added=1 updated=1 unchanged=1 reused=0 removed=0 failed=0"; err != nil || got != want {
				t.Errorf("next build: %s, %v; want %s", got, err, want)
			}
			if img, _ := verify(t, db); img != 3 {
				t.Errorf("index holds %d images, want 3", img)
			}
		})
	}
}

// victimEnc is fakeEnc failing every pass that holds an image whose
// content contains "victim" (its pixels are those of that content).
type victimEnc struct{ fakeEnc }

func (e *victimEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	for _, c := range []string{png + "victim fresh", png + "victim changed"} {
		p := fakePixels([]byte(c))
		for i := range n {
			if slices.Equal(pix[i*dim:(i+1)*dim], p) {
				return nil, errors.New("device hiccup")
			}
		}
	}
	return e.fakeEnc.EncodeImages(pix, n)
}

// TestBuildCancelRecordsNoFailure: a build cancelled while a decode
// stopped with it (the decoder's error wraps context.Canceled) does not
// record that file as failed; the next build indexes it.
func TestBuildCancelRecordsNoFailure(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	for i := range 4 {
		write(t, filepath.Join(d, fmt.Sprintf("p%d.png", i)), fmt.Sprintf("%simage %d", png, i))
	}
	cut := filepath.Join(d, "p2.png")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := opts(&fakeEnc{})
	o.Workers = 1
	o.Preprocess = func(data []byte, path string) ([]float32, error) {
		if path == cut {
			return nil, fmt.Errorf("decode %s: %w", path, context.Canceled)
		}
		return fakePre(data, path)
	}
	// The run is cancelled as soon as that file's outcome is recorded, so
	// that the commit on the way out holds it.
	o.Progress = func(e Event) {
		if e.Phase == "index" && e.Path == cut {
			cancel()
		}
	}
	sum, err := Build(ctx, db, []string{d}, o)
	if !errors.Is(err, context.Canceled) || sum == nil || sum.Complete {
		t.Fatalf("cancelled build: %v, %v", sum, err)
	}
	if len(sum.Failures) != 1 || !sum.Failures[0].Transient {
		t.Errorf("failures %+v, want %s reported as transient", sum.Failures, cut)
	}
	if f, ok := record(t, db, cut); ok {
		t.Errorf("the file the build was cancelled on is recorded as %+v", f)
	}
	if _, fail := verify(t, db); fail != 0 {
		t.Errorf("%d failures recorded", fail)
	}
	sum, err = Build(context.Background(), db, []string{d}, opts(&fakeEnc{}))
	if err != nil || sum.Failed != 0 {
		t.Fatalf("next build: %s, %v", sumOf(sum), err)
	}
	if f, ok := record(t, db, cut); !ok || f.Failed() {
		t.Errorf("after the next build: %+v, %v; want it indexed", f, ok)
	}
}

// TestBuildRetriesFailuresOfAnEarlierClipidx: an index whose failures were
// written as version 1 records (no kind, no reach, as clipidx wrote them
// before) has them read again once by its next build, even with the same
// reach: the photo a new decoder reads is indexed, the text file fails
// again and its new record stops further retries.
func TestBuildRetriesFailuresOfAnEarlierClipidx(t *testing.T) {
	d, phone, text := failureTree(t)
	db := filepath.Join(t.TempDir(), "i.db")
	enc := &fakeEnc{}
	reach := []string{"heic", "jpeg", "png"}
	// "Before": the HEIC photo and the text file failed, recorded as an
	// earlier clipidx did (the store writes a failure without kind or
	// reach as a version 1 record; store tests check the bytes).
	if sum, _ := buildWith(t, db, d, enc, []string{"jpeg", "png"}, nil); sum.Failed != 2 {
		t.Fatalf("first build: %s", sumOf(sum))
	}
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	for _, p := range []string{phone, text} {
		f, _ := record(t, db, p)
		b.Put(p, store.File{Size: f.Size, MtimeNs: f.MtimeNs, Hash: f.Hash, Err: f.Err}, nil)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f, _ := record(t, db, phone); f.Kind != "" || f.Reach != "" || !f.Failed() {
		t.Fatalf("the photo's record is %+v, want a failure without kind or reach", f)
	}

	sum, calls := buildWith(t, db, d, enc, reach, nil)
	if got, want := sumOf(sum), "added=0 updated=1 unchanged=1 reused=0 removed=0 failed=1"; got != want || calls != 2 {
		t.Errorf("next build: %s with %d decodes, want %s and 2", got, calls, want)
	}
	if f, _ := record(t, db, text); f.Kind != store.FailFormat || f.Reach != "heic,jpeg,png" {
		t.Errorf("the text file's new record is %+v, want kind format and this build's reach", f)
	}
	if sum, calls := buildWith(t, db, d, enc, reach, nil); sum.Unchanged != 3 || calls != 0 {
		t.Errorf("the build after: %s with %d decodes, want nothing read", sumOf(sum), calls)
	}
}

// TestBuildRetriesSamplesOfAnUnchangedShard: a webdataset sample that
// failed as an unsupported format is retried when the reach grows, though
// its shard did not change (the shard is read again, its other samples
// only hashed).
func TestBuildRetriesSamplesOfAnUnchangedShard(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "00000.tar")
	writeTar(t, shard, []member{{name: "k1.jpg", data: png + "one"}, {name: "k2.jpg", data: heic + "two"}})
	db := filepath.Join(t.TempDir(), "i.db")
	enc := &fakeEnc{}
	if sum, _ := buildWith(t, db, shard, enc, []string{"png"}, nil); sum.Added != 1 || sum.Failed != 1 {
		t.Fatalf("first build: %s", sumOf(sum))
	}
	if sum, calls := buildWith(t, db, shard, enc, []string{"png"}, nil); sum.Unchanged != 2 || calls != 0 {
		t.Errorf("same reach: %s with %d decodes, want the shard skipped", sumOf(sum), calls)
	}
	sum, calls := buildWith(t, db, shard, enc, []string{"heic", "png"}, nil)
	if got, want := sumOf(sum), "added=0 updated=1 unchanged=1 reused=0 removed=0 failed=0"; got != want || calls != 1 {
		t.Errorf("reach with heic: %s with %d decodes, want %s and 1", got, calls, want)
	}
	if f, _ := record(t, db, shard+SampleSep+"k2"); f.Failed() {
		t.Errorf("the HEIC sample is still failed: %+v", f)
	}
	if sum, calls := buildWith(t, db, shard, enc, []string{"heic", "png"}, nil); sum.Unchanged != 2 || calls != 0 {
		t.Errorf("after: %s with %d decodes, want the shard skipped again", sumOf(sum), calls)
	}
}

// TestBuildRereadsAShardAfterATransientSampleFailure: a sample whose
// decode failed with an I/O error gets no record, and its shard's stat is
// not recorded either, so the next build reads the shard again and
// indexes the sample.
func TestBuildRereadsAShardAfterATransientSampleFailure(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "00000.tar")
	writeTar(t, shard, []member{{name: "k1.jpg", data: png + "one"}, {name: "k2.jpg", data: png + "two"}})
	db := filepath.Join(t.TempDir(), "i.db")
	o := opts(&fakeEnc{})
	o.Preprocess = func(data []byte, path string) ([]float32, error) {
		if strings.HasSuffix(path, "#k2") {
			return nil, fmt.Errorf("read: %w", syscall.EIO)
		}
		return fakePre(data, path)
	}
	sum, err := Build(context.Background(), db, []string{shard}, o)
	if err != nil || sum.Added != 1 || sum.Failed != 1 || !sum.Failures[0].Transient {
		t.Fatalf("first build: %+v, %v", sum, err)
	}
	if f, ok := record(t, db, shard+"#k2"); ok {
		t.Errorf("sample recorded as %+v", f)
	}
	sum, err = Build(context.Background(), db, []string{shard}, opts(&fakeEnc{}))
	if got, want := sumOf(sum), "added=1 updated=0 unchanged=1 reused=0 removed=0 failed=0"; err != nil || got != want {
		t.Errorf("next build: %s, %v; want %s", got, err, want)
	}
}

// TestBuildRefusesABadReach: a format name with a comma would not survive
// the record's comma-separated list.
func TestBuildRefusesABadReach(t *testing.T) {
	o := opts(&fakeEnc{})
	o.Reach = []string{"png", "jpeg,jpg"}
	_, err := Build(context.Background(), filepath.Join(t.TempDir(), "i.db"), []string{t.TempDir()}, o)
	if err == nil || !strings.Contains(err.Error(), `"jpeg,jpg"`) {
		t.Errorf("err = %v, want the bad name refused", err)
	}
}

// TestBuildRetriesCorruptWhenTheReachGrows: a file a decoder took for
// damaged (an animated WebP, a CMYK TIFF, before the decoder read them or
// told them apart) is read again, its stat unchanged, by the first build
// whose reach grew, and indexed; a build whose reach did not grow reads
// it no more (once a corrupt failure waited for the file to change, and an
// upgrade never reached it).
func TestBuildRetriesCorruptWhenTheReachGrows(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "a.png"), png+"a")
	anim := filepath.Join(d, "anim.webp")
	write(t, anim, animWebP+"frames")
	db := filepath.Join(t.TempDir(), "i.db")
	enc := &fakeEnc{}
	old := []string{"jpeg", "png", "webp"}
	buildWith(t, db, d, enc, old, nil)
	if f, _ := record(t, db, anim); f.Kind != store.FailCorrupt || !f.Failed() {
		t.Fatalf("animated WebP recorded as %+v, want a corrupt failure", f)
	}
	if sum, calls := buildWith(t, db, d, enc, old, nil); sum.Unchanged != 2 || calls != 0 {
		t.Errorf("same reach: %s with %d decodes, want all unchanged and none", sumOf(sum), calls)
	}
	grown := []string{"jpeg", "png", "webp", "webp-anim"}
	if sum, calls := buildWith(t, db, d, enc, grown, nil); sumOf(sum) != "added=0 updated=1 unchanged=1 reused=0 removed=0 failed=0" || calls != 1 {
		t.Errorf("grown reach: %s with %d decodes, want the WebP updated with one decode", sumOf(sum), calls)
	}
	if f, _ := record(t, db, anim); f.Failed() {
		t.Errorf("the animated WebP is still a failure: %+v", f)
	}
}
