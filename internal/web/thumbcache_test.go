package web

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// TestThumbCacheUnusable: a thumbnail folder that cannot be made (here
// its parent is a regular file, which stops MkdirAll even for root, as a
// read-only home stops it for a user) does not stop New: thumbnails are
// made on each request, and ThumbCacheErr says why, naming the folder.
func TestThumbCacheUnusable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	thumbDir := filepath.Join(blocker, "clipidx", "thumbs")
	e := newEnv(t, func(o *Options) { o.ThumbDir = thumbDir })
	err := e.srv.ThumbCacheErr()
	if err == nil || !strings.Contains(err.Error(), thumbDir) {
		t.Errorf("ThumbCacheErr() = %v, want an error naming %s", err, thumbDir)
	}
	id := e.srv.ids.id(filepath.Join(e.dir, "wide_300x200.png"))
	for i := range 2 { // the second is made again: nothing was kept
		code, body, h := e.get(t, "/thumb/"+id)
		if code != http.StatusOK || h.Get("Content-Type") != "image/jpeg" {
			t.Fatalf("thumbnail %d without a cache: %d %s %q", i, code, h.Get("Content-Type"), body)
		}
		if b := decodeThumb(t, body); b.Dx() != ThumbSize || b.Dy() != 171 {
			t.Errorf("thumbnail %d without a cache: %v, want 256x171", i, b)
		}
	}
	if _, err := os.Stat(thumbDir); err == nil {
		t.Errorf("%s exists", thumbDir)
	}
}

// TestThumbCacheErr: ThumbCacheErr is nil when thumbnails are kept and
// when no folder was asked for.
func TestThumbCacheErr(t *testing.T) {
	for name, dir := range map[string]string{"kept": filepath.Join(t.TempDir(), "a", "thumbs"), "none asked": ""} {
		srv, err := New(Options{DB: "index.db", Addr: "127.0.0.1:8080", ThumbDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.ThumbCacheErr(); err != nil {
			t.Errorf("%s: ThumbCacheErr() = %v, want nil", name, err)
		}
	}
}

// TestThumbCacheDamagedEntry: a cached thumbnail left empty, cut or
// overwritten (a power cut after put's unsynced rename) is not served: the
// next request, on this server or a restarted one, gets the thumbnail made
// again, and the entry on disk is rewritten; a whole entry is served
// without a decode.
func TestThumbCacheDamagedEntry(t *testing.T) {
	decodes := countDecodes(t)

	thumbDir := filepath.Join(t.TempDir(), "thumbs")
	e := newEnv(t, func(o *Options) { o.ThumbDir = thumbDir })
	photo := filepath.Join(e.dir, "wide_300x200.png")
	code, good, _ := e.get(t, "/thumb/"+e.srv.ids.id(photo))
	if code != http.StatusOK {
		t.Fatalf("first thumbnail: %d %q", code, good)
	}
	decodeThumb(t, good)
	ents, err := os.ReadDir(thumbDir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("cache after one thumbnail: %v %v, want one entry", ents, err)
	}
	entry := filepath.Join(thumbDir, ents[0].Name())

	for _, tc := range []struct {
		name    string
		damaged []byte
		restart bool
	}{
		{"empty", nil, false},
		{"garbage", []byte("garbage!"), false},
		{"first half", good[:len(good)/2], false},
		{"last byte lost", good[:len(good)-1], false},
		{"zeros", make([]byte, len(good)), false},
		{"empty, after a restart", nil, true},
	} {
		if err := os.WriteFile(entry, tc.damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		srv := e
		if tc.restart {
			srv = &env{dir: e.dir, db: e.db}
			srv.start(t, func(o *Options) { o.ThumbDir = thumbDir })
		}
		id := srv.srv.ids.id(photo)
		before := decodes.Load()
		code, body, h := srv.get(t, "/thumb/"+id)
		if code != http.StatusOK || h.Get("Content-Type") != "image/jpeg" || !bytes.Equal(body, good) {
			t.Errorf("%s entry: %d %s, %d bytes, want 200 and the %d bytes of the thumbnail", tc.name, code, h.Get("Content-Type"), len(body), len(good))
			continue
		}
		if n := decodes.Load() - before; n != 1 {
			t.Errorf("%s entry: %d decodes, want 1 (made again)", tc.name, n)
		}
		if b, err := os.ReadFile(entry); err != nil || !bytes.Equal(b, good) {
			t.Errorf("%s entry: on disk %d bytes (%v) after the request, want the %d made again", tc.name, len(b), err, len(good))
		}
		// The rewritten entry is whole: served from the cache.
		before = decodes.Load()
		if code, body, _ := srv.get(t, "/thumb/"+id); code != http.StatusOK || !bytes.Equal(body, good) {
			t.Errorf("%s entry, next request: %d, %d bytes", tc.name, code, len(body))
		}
		if n := decodes.Load() - before; n != 0 {
			t.Errorf("%s entry, next request: %d decodes, want 0 (from the cache)", tc.name, n)
		}
	}
}

// TestThumbOK: the check on read accepts what thumbnail writes and
// refuses what damage leaves.
func TestThumbOK(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	good := encodeJPEG(t, shrink(src, ThumbSize))
	tiny := encodeJPEG(t, image.NewRGBA(image.Rect(0, 0, 1, 1)))
	big := encodeJPEG(t, src) // larger than any thumbnail
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"thumbnail", good, true},
		{"1x1 thumbnail", tiny, true},
		{"empty", nil, false},
		{"garbage", []byte("garbage!"), false},
		{"markers only", []byte{0xff, 0xd8, 0xff, 0xd9}, false},
		{"first half", good[:len(good)/2], false},
		{"last byte lost", good[:len(good)-1], false},
		{"tail zeroed", append(good[:len(good)-512:len(good)-512], make([]byte, 512)...), false},
		{"zeros", make([]byte, len(good)), false},
		{"header gone", append(make([]byte, 256), good[256:]...), false},
		{"larger than ThumbSize", big, false},
	} {
		if got := thumbOK(tc.b); got != tc.ok {
			t.Errorf("%s (%d bytes): thumbOK = %v, want %v", tc.name, len(tc.b), got, tc.ok)
		}
	}
}

// TestThumbCacheDropsDamaged: getWhole removes a damaged entry and takes
// its size off the folder's total; get and getWhole return a whole one.
func TestThumbCacheDropsDamaged(t *testing.T) {
	dir := t.TempDir()
	th, err := openThumbs(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	good := encodeJPEG(t, image.NewRGBA(image.Rect(0, 0, 16, 16)))
	th.put(store.Hash{1}, good)
	th.put(store.Hash{2}, good[:100])
	if b := th.getWhole(store.Hash{1}); !bytes.Equal(b, good) {
		t.Errorf("whole entry: getWhole gave %d bytes, want %d", len(b), len(good))
	}
	if b := th.getWhole(store.Hash{2}); b != nil {
		t.Errorf("cut entry: getWhole gave %d bytes, want a miss", len(b))
	}
	if _, err := os.Stat(th.file(store.Hash{2})); !os.IsNotExist(err) {
		t.Errorf("cut entry still on disk (%v)", err)
	}
	if th.total != int64(len(good)) {
		t.Errorf("total %d after dropping the cut entry, want %d", th.total, len(good))
	}
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeThumb decodes a served thumbnail whole and returns its bounds.
func decodeThumb(t *testing.T, b []byte) image.Rectangle {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("thumbnail of %d bytes: %v", len(b), err)
	}
	return img.Bounds()
}

// TestThumbCacheFolderRemoved: removing the thumbnail folder while serve
// runs (safe, says the README) turned the cache off until a restart:
// every thumbnail was made again at every request. The folder is made
// again and thumbnails are kept as before.
func TestThumbCacheFolderRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "thumbs")
	e := newEnv(t, func(o *Options) { o.ThumbDir = dir })
	id := e.idOf(t, filepath.Join(e.dir, "wide_300x200.png"))
	if code, _, _ := e.get(t, "/thumb/"+id); code != 200 {
		t.Fatalf("thumb: %d", code)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.get(t, "/thumb/"+id); code != 200 {
		t.Fatalf("thumb after the folder was removed: %d", code)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 {
		t.Errorf("thumbnail folder after a thumbnail was made: %v (%v), want the folder with it", ents, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the thumbnail folder made again: %v (%v), want mode 0700 as at start", fi.Mode(), err)
	}
}

// countDecodes counts the thumbnail decodes from now to the end of the
// test: a thumbnail served from the cache is none.
func countDecodes(t *testing.T) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	old := decodeForThumb
	decodeForThumb = func(ctx context.Context, data []byte, name string, minSide int) (*image.RGBA, error) {
		n.Add(1)
		return old(ctx, data, name, minSide)
	}
	t.Cleanup(func() { decodeForThumb = old })
	return &n
}
