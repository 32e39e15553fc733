package index

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/video/videotest"
	"github.com/clipidx/clipidx/store"
)

// motionFiles are a plain JPEG, the same with a video appended as a
// Pixel (Google's Motion Photo format) and a Samsung phone lay it out, and
// a PNG, each with the name given.
func motionFiles(t *testing.T, dir string) (pixel, samsung, plain, pngFile string) {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 16, 8)), nil); err != nil {
		t.Fatal(err)
	}
	jpg := buf.Bytes()
	mp4 := append(videotest.QTBox("ftyp", []byte("isom\x00\x00\x02\x00isommp41")), videotest.QTBox("moov", videotest.QTBox("mvhd", make([]byte, 100)))...)
	trailer := []byte("SEFH\x6b\x00\x00\x00\x01\x00\x00\x00MotionPhoto_Data\x00\x00\x00\x00SEFT")
	pixel, samsung, plain, pngFile = filepath.Join(dir, "PXL_1.MP.jpg"), filepath.Join(dir, "20240101_1.jpg"), filepath.Join(dir, "plain.jpg"), filepath.Join(dir, "a.png")
	write(t, pixel, string(videotest.WithXMP(jpg, videotest.MotionXMP(len(mp4))))+string(mp4))
	write(t, samsung, string(jpg)+"MotionPhoto_Data"+string(mp4)+string(trailer))
	write(t, plain, string(jpg))
	write(t, pngFile, png+"a")
	return
}

// jpegOrFakePre decodes JPEGs as fakePre decodes its PNGs (pixels from the
// content), for the Motion Photo tests.
func jpegOrFakePre(data []byte, path string) ([]float32, error) {
	if bytes.HasPrefix(data, []byte{0xFF, 0xD8}) {
		return fakePixels(data), nil
	}
	return fakePre(data, path)
}

// TestMetaMotionPhotos: a build records which stills carry a video
// (Motion Photos: Google's format and Samsung's), from the bytes it reads
// anyway; an index whose records an older clipidx wrote (no such mark)
// learns it at its next build, with no model run, reading each file's
// headers and last bytes only; a third build reads nothing.
func TestMetaMotionPhotos(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	pixel, samsung, plain, pngFile := motionFiles(t, d)
	e := &fakeEnc{}
	var metaReads int
	o := opts(e)
	o.Preprocess = jpegOrFakePre
	o.Progress = func(ev Event) {
		if ev.Phase == "meta" && ev.Path != "" {
			metaReads++
		}
	}
	build := func(want string) {
		t.Helper()
		metaReads = 0
		sum, err := Build(context.Background(), db, []string{d}, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := sumOf(sum); got != want {
			t.Errorf("build: %s, want %s", got, want)
		}
	}
	check := func(when string) {
		t.Helper()
		ms, _ := readMetas(t, db)
		for p, want := range map[string]bool{pixel: true, samsung: true, plain: false, pngFile: false} {
			if m, ok := ms[p]; !ok || m.Motion != want || !m.MotionRead {
				t.Errorf("%s: %s: metadata %v, motion %v, read %v; want motion %v, read", when, filepath.Base(p), ok, m.Motion, m.MotionRead, want)
			}
		}
	}
	build("added=4 updated=0 unchanged=0 reused=0 removed=0 failed=0")
	check("first build")

	// As an older clipidx left it: metadata without the mark.
	w, err := store.OpenWriter(db, fakeID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := readMetas(t, db)
	var b store.Batch
	for p, m := range ms {
		m.Motion, m.MotionRead = false, false
		b.PutMeta(p, m)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	calls := e.calls.Load()
	build("added=0 updated=0 unchanged=4 reused=0 removed=0 failed=0")
	check("upgrade")
	if e.calls.Load() != calls || metaReads != 4 {
		t.Errorf("upgrade: %d model passes, %d files read for metadata; want none, 4", e.calls.Load()-calls, metaReads)
	}
	ms2, _ := readMetas(t, db)
	for p, m := range ms {
		m2 := ms2[p]
		m.Motion, m.MotionRead = m2.Motion, m2.MotionRead
		if m2 != m {
			t.Errorf("upgrade changed more than the Motion Photo mark of %s: %+v, was %+v", filepath.Base(p), ms2[p], m)
		}
	}
	build("added=0 updated=0 unchanged=4 reused=0 removed=0 failed=0")
	if metaReads != 0 {
		t.Errorf("third build read %d files for metadata, want none", metaReads)
	}
}

// TestMetaMotionPhotoInShard: a Motion Photo inside a webdataset shard is
// not marked as one: serve plays a still's video from its file, and a
// sample has none of its own.
func TestMetaMotionPhotoInShard(t *testing.T) {
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	pixel, _, _, _ := motionFiles(t, filepath.Join(d, "files"))
	data, err := os.ReadFile(pixel)
	if err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(d, "00000.tar")
	writeTar(t, shard, []member{{name: "000000000.jpg", data: string(data)}, {name: "000000000.txt", data: "a photo"}})
	o := opts(&fakeEnc{})
	o.Preprocess = jpegOrFakePre
	if _, err := Build(context.Background(), db, []string{shard, pixel}, o); err != nil {
		t.Fatal(err)
	}
	ms, _ := readMetas(t, db)
	if m := ms[shard+SampleSep+"000000000"]; m.Motion {
		t.Errorf("the shard's sample is marked a Motion Photo: %+v", m)
	}
	if m := ms[pixel]; !m.Motion {
		t.Errorf("the same bytes as a file are not marked a Motion Photo: %+v", m)
	}
}
