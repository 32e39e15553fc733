package web

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/store"
)

// serveDB starts a server over an index built by the test.
func serveDB(t *testing.T, db string, edit func(*Options)) *env {
	t.Helper()
	e := &env{db: db}
	e.start(t, edit)
	return e
}

// wantServed checks that the thumbnail and the image of path are served,
// the image with want's bytes.
func (e *env) wantServed(t *testing.T, path string, want []byte) {
	t.Helper()
	id := e.srv.ids.id(path)
	if code, body, _ := e.get(t, "/thumb/"+id); code != 200 {
		t.Errorf("thumbnail of %s: %d %s, want 200", path, code, body)
	}
	if code, body, _ := e.get(t, "/image/"+id); code != 200 || !bytes.Equal(body, want) {
		t.Errorf("image of %s: %d, %d bytes, want 200 and its %d bytes", path, code, len(body), len(want))
	}
}

// wantGone checks that neither the thumbnail nor the image of path is
// served.
func (e *env) wantGone(t *testing.T, path string) {
	t.Helper()
	id := e.srv.ids.id(path)
	for _, what := range []string{"/thumb/", "/image/"} {
		if code, body, _ := e.get(t, what+id); code != http.StatusNotFound {
			t.Errorf("%s of %s: %d %s, want 404", what, path, code, body)
		}
	}
}

// TestServeAfterSubfolderBuild: `build DIR` then `build DIR/2024` keeps
// every record of DIR servable, a link inside DIR to a file of DIR too
// (its real path is checked against every folder ever indexed, not only
// the last build's).
func TestServeAfterSubfolderBuild(t *testing.T) {
	dir := photos(t)
	sub := filepath.Join(dir, "2024")
	os.Mkdir(sub, 0o755)
	os.Rename(filepath.Join(dir, "tiny_50x30.png"), filepath.Join(sub, "tiny_50x30.png"))
	link := filepath.Join(dir, "alias.png")
	if err := os.Symlink(filepath.Join(dir, "gray_260x200.png"), link); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "index.db")
	build(t, db, index.Options{}, dir)
	build(t, db, index.Options{}, sub)
	e := serveDB(t, db, nil)
	for _, p := range []string{filepath.Join(dir, "wide_300x200.png"), link, filepath.Join(sub, "tiny_50x30.png")} {
		e.wantServed(t, p, mustRead(t, p))
	}
}

// TestServeMergedIndex: an index merged into another serves the files of
// both (the output's own folders stay servable after the merge).
func TestServeMergedIndex(t *testing.T) {
	a, b := photos(t), photos(t)
	for _, d := range []string{a, b} {
		if err := os.Symlink(filepath.Join(d, "gray_260x200.png"), filepath.Join(d, "alias.png")); err != nil {
			t.Fatal(err)
		}
	}
	dbA, dbB := filepath.Join(t.TempDir(), "a.db"), filepath.Join(t.TempDir(), "b.db")
	build(t, dbA, index.Options{}, a)
	build(t, dbB, index.Options{}, b)
	if _, err := store.Merge(dbB, []string{dbA}, store.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	e := serveDB(t, dbB, nil)
	for _, d := range []string{a, b} {
		for _, name := range []string{"wide_300x200.png", "alias.png"} {
			p := filepath.Join(d, name)
			e.wantServed(t, p, mustRead(t, p))
		}
	}
}

// TestLinkOutOfEveryRoot: with two folders indexed, a file replaced by a
// link to a copy outside both (same size, time and content) is refused.
func TestLinkOutOfEveryRoot(t *testing.T) {
	dir := photos(t)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	db := filepath.Join(t.TempDir(), "index.db")
	build(t, db, index.Options{}, dir)
	build(t, db, index.Options{}, sub)
	e := serveDB(t, db, nil)
	p := filepath.Join(dir, "noise_257x231.png")
	e.wantServed(t, p, mustRead(t, p))

	outside := filepath.Join(t.TempDir(), "secret.png")
	copyFile(t, p, outside)
	fi, _ := os.Stat(p)
	os.Chtimes(outside, fi.ModTime(), fi.ModTime())
	os.Remove(p)
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	e2 := serveDB(t, db, func(o *Options) { o.ThumbDir = "" }) // no cached thumbnail
	e2.wantGone(t, p)
}

// shardMember is one member of a test shard.
type shardMember struct {
	name string
	data []byte
}

func writeShard(t *testing.T, path string, ms []shardMember) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServeSample serves webdataset samples from their shard (a member in
// a folder of the tar too, whose key holds the folder), and refuses one
// whose member changed while the shard kept its size and time.
func TestServeSample(t *testing.T) {
	imgs := photos(t)
	long := strings.Repeat("folder", 20)
	gray, wide, noise := mustRead(t, filepath.Join(imgs, "gray_260x200.png")), mustRead(t, filepath.Join(imgs, "wide_300x200.png")), mustRead(t, filepath.Join(imgs, "noise_257x231.png"))
	ms := []shardMember{
		{"00000.png", gray}, {"00000.txt", []byte("a gray picture\n")},
		{"./part/00001.png", wide}, {"./part/00001.json", []byte(`{"k": 1}`)},
		{"00002.txt", []byte("noise\n")}, {"00002.png", noise},
		{long + "/00003.png", wide}, // a name over tar's 100 bytes: a PAX header before it
	}
	shard := filepath.Join(t.TempDir(), "00000.tar")
	writeShard(t, shard, ms)
	db := filepath.Join(t.TempDir(), "index.db")
	build(t, db, index.Options{}, shard)
	e := serveDB(t, db, nil)
	e.wantServed(t, shard+"#00000", gray)
	e.wantServed(t, shard+"#part/00001", wide)
	e.wantServed(t, shard+"#"+long+"/00003", wide)
	if code, body, _ := e.get(t, "/image/"+e.srv.ids.id(shard+"#00002"), "Range", "bytes=8-23"); code != http.StatusPartialContent || !bytes.Equal(body, noise[8:24]) {
		t.Errorf("range of a sample: %d %q, want 206 and bytes 8-23", code, body)
	}

	// One byte of sample 00002's image changed, the shard's size and
	// time kept: only the content hash tells.
	fi, _ := os.Stat(shard)
	changed := bytes.Clone(noise)
	changed[len(changed)/2] ^= 0xff
	ms[5].data = changed
	writeShard(t, shard, ms)
	os.Chtimes(shard, fi.ModTime(), fi.ModTime())
	e2 := serveDB(t, db, func(o *Options) { o.ThumbDir = "" })
	e2.wantGone(t, shard+"#00002")
	e2.wantServed(t, shard+"#00000", gray)
}

// storeIndex indexes files directly into db (no model, no decode): a
// record of each file's size, time and hash with a made-up vector, and
// root in the roots registry.
func storeIndex(t testing.TB, db, root string, paths ...string) {
	t.Helper()
	w, err := store.OpenWriter(db, store.Identity{Model: "test-files", Dim: 4}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.AddRoots([]string{root}); err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		fi, _ := os.Stat(p)
		if err != nil || fi == nil {
			t.Fatalf("%s: %v", p, err)
		}
		b.Put(p, store.File{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano(), Hash: store.Hash(h.Sum(nil))}, []float32{1, float32(i), 0, 1})
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
}

// TestImageStreamed: /image of a 48 MB file allocates far less than its
// size, answers a Range request with 206 and the bytes asked, and refuses
// a file whose bytes changed while its size and time did not.
func TestImageStreamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.jpg")
	big := make([]byte, 48<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>11)
	}
	os.WriteFile(p, big, 0o644)
	db := filepath.Join(t.TempDir(), "index.db")
	storeIndex(t, db, dir, p)
	e := serveDB(t, db, nil)
	id := e.srv.ids.id(p)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := http.Get(e.ts.URL + "/image/" + id)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	copied, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || resp.StatusCode != 200 || copied != int64(len(big)) || [32]byte(h.Sum(nil)) != sha256.Sum256(big) {
		t.Fatalf("image: %d, %d bytes (%v), want 200 and the file's %d bytes", resp.StatusCode, copied, err, len(big))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(big))/4 {
		t.Errorf("serving a %d MB file allocated %d MB", len(big)>>20, alloc>>20)
	}

	code, body, hdr := e.get(t, "/image/"+id, "Range", "bytes=1000000-1000099")
	if code != http.StatusPartialContent || !bytes.Equal(body, big[1000000:1000100]) || hdr.Get("Content-Range") != fmt.Sprintf("bytes 1000000-1000099/%d", len(big)) {
		t.Errorf("range: %d %q, %d bytes, want 206 and bytes 1000000-1000099", code, hdr.Get("Content-Range"), len(body))
	}

	fi, _ := os.Stat(p)
	big[len(big)-1] ^= 1
	os.WriteFile(p, big, 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if code, _, _ := e.get(t, "/image/"+id); code != http.StatusNotFound {
		t.Errorf("image whose bytes changed, size and time kept: %d, want 404", code)
	}
}

// TestThumbDecodeBound: thumbnails requested four per core at once are
// decoded at most one per core at once (all get theirs), and a request
// waiting for a decode slot gives up when its context ends.
func TestThumbDecodeBound(t *testing.T) {
	slots := cap(decodeSlots)
	var now, peak, calls atomic.Int32
	full := make(chan struct{})
	var fullOnce sync.Once
	old := decodeForThumb
	decodeForThumb = func(ctx context.Context, data []byte, name string, minSide int) (*image.RGBA, error) {
		calls.Add(1)
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n == int32(slots) {
			fullOnce.Do(func() { close(full) })
		}
		// Hold the slot until every slot is taken (or a while), so that
		// an unbounded server would show more at once.
		select {
		case <-full:
		case <-time.After(2 * time.Second):
		}
		time.Sleep(20 * time.Millisecond)
		return image.NewRGBA(image.Rect(0, 0, 8, 8)), nil
	}
	t.Cleanup(func() { decodeForThumb = old })

	dir := t.TempDir()
	var paths []string
	for i := range 4 * slots {
		p := filepath.Join(dir, fmt.Sprintf("%02d.jpg", i))
		os.WriteFile(p, []byte(fmt.Sprintf("image %d", i)), 0o644)
		paths = append(paths, p)
	}
	db := filepath.Join(t.TempDir(), "index.db")
	storeIndex(t, db, dir, paths...)
	e := serveDB(t, db, func(o *Options) { o.ThumbDir = "" })
	var wg sync.WaitGroup
	codes := make([]int, len(paths))
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = e.get(t, "/thumb/"+e.srv.ids.id(p))
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("thumbnail %d: %d, want 200", i, c)
		}
	}
	if peak.Load() > int32(slots) || calls.Load() != int32(len(paths)) {
		t.Errorf("%d decodes, at most %d at once; want %d, at most %d (one per core)", calls.Load(), peak.Load(), len(paths), slots)
	}

	// Every slot taken: a request waits, and leaves when its context ends.
	for range slots {
		decodeSlots <- struct{}{}
	}
	defer func() {
		for range slots {
			<-decodeSlots
		}
	}()
	var f indexedFile
	err := e.srv.view(func(snap *store.Snapshot) (err error) {
		f, err = e.srv.resolve(snap, e.srv.ids.id(paths[0]))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.srv.thumbOf(ctx, f); err != context.DeadlineExceeded {
		t.Errorf("waiting for a decode slot past the request's end: %v, want %v", err, context.DeadlineExceeded)
	}
}

// TestThumbSourceBound: a file over MaxThumbSource gets no thumbnail (413)
// without being read, its image is still served.
func TestThumbSourceBound(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "huge.jpg")
	var buf bytes.Buffer
	jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 16, 16)), nil)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(buf.Bytes())
	f.Truncate(MaxThumbSource + 1) // sparse: no disk used
	f.Close()
	db := filepath.Join(t.TempDir(), "index.db")
	storeIndex(t, db, dir, p)
	e := serveDB(t, db, nil)
	if code, body, _ := e.get(t, "/thumb/"+e.srv.ids.id(p)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("thumbnail of a %d MiB file: %d %s, want 413", MaxThumbSource>>20, code, body)
	}
}

// TestServeThroughFolderLink: the build follows a folder link inside a
// root to a folder outside every root; the files it indexed there are
// served, while a file link inside that folder leading elsewhere is not.
func TestServeThroughFolderLink(t *testing.T) {
	dir, ext := photos(t), photos(t)
	outside := filepath.Join(t.TempDir(), "secret.png")
	if err := os.WriteFile(outside, mustRead(t, filepath.Join(ext, "gray_260x200.png")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ext, filepath.Join(dir, "ext")); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "index.db")
	build(t, db, index.Options{}, dir)
	e := serveDB(t, db, nil)
	p := filepath.Join(dir, "ext", "wide_300x200.png")
	e.wantServed(t, p, mustRead(t, p))
	// The indexed file becomes a link to a copy outside: refused.
	q := filepath.Join(ext, "gray_260x200.png")
	st, err := os.Stat(q)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(q)
	if err := os.Symlink(outside, q); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(outside, st.ModTime(), st.ModTime())
	e.wantGone(t, filepath.Join(dir, "ext", "gray_260x200.png"))
}
