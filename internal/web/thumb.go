package web

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// ThumbSize is the longest side of a thumbnail in pixels.
const ThumbSize = 256

// thumbs is the on-disk thumbnail cache: one JPEG per content hash, the
// oldest removed when the folder grows over its cap.
type thumbs struct {
	dir string
	cap int64
	// off is why dir cannot be used (see thumbsOrNone); when set the cache
	// keeps nothing.
	off error
	// readOnly is why nothing can be written in dir (ErrThumbsReadOnly):
	// the thumbnails already there are served, new ones are not kept.
	readOnly error

	mu    sync.Mutex
	total int64
}

func openThumbs(dir string, capBytes int64) (*thumbs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("thumbnail cache %s: %w", dir, err)
	}
	t := &thumbs{dir: dir, cap: capBytes}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("thumbnail cache %s: %w", dir, err)
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			t.total += fi.Size()
		}
	}
	// A folder that exists but may not be written (a read-only mount, a
	// cache another user made) would keep nothing, silently.
	if f, err := os.CreateTemp(dir, ".tmp-*"); err != nil {
		t.readOnly = fmt.Errorf("thumbnail cache %s: %w (%v)", dir, ErrThumbsReadOnly, err)
	} else {
		f.Close()
		os.Remove(f.Name())
	}
	return t, nil
}

// ErrThumbsReadOnly is ThumbCacheErr's error when the thumbnail folder may
// be read but not written.
var ErrThumbsReadOnly = errors.New("nothing can be written there: the thumbnails it holds are served, new ones are made on every request")

func (t *thumbs) file(h store.Hash) string {
	return filepath.Join(t.dir, hex.EncodeToString(h[:])+".jpg")
}

// thumbsOrNone opens the cache in dir, or, when dir cannot be made or read
// (a read-only home, a file in the way), returns a cache that keeps
// nothing and holds the reason: without a cache each thumbnail is made on
// every request, slower but working, so it never stops the server.
func thumbsOrNone(dir string, capBytes int64) *thumbs {
	t, err := openThumbs(dir, capBytes)
	if err != nil {
		return &thumbs{dir: dir, cap: capBytes, off: err}
	}
	return t
}

// ThumbCacheErr returns why thumbnails are not kept on disk: the error
// that made Options.ThumbDir unusable when New opened it. It is nil when
// they are kept or when no ThumbDir was given. The server works either
// way; the caller decides whether to tell the user. A folder that may be
// read but not written gives an error wrapping ErrThumbsReadOnly.
func (s *Server) ThumbCacheErr() error {
	if s.th == nil {
		return nil
	}
	if s.th.off != nil {
		return s.th.off
	}
	return s.th.readOnly
}

// get returns the bytes stored for h, nil for a miss, unchecked: the
// server reads through getWhole.
func (t *thumbs) get(h store.Hash) []byte {
	if t.off != nil {
		return nil
	}
	b, err := os.ReadFile(t.file(h))
	if err != nil {
		return nil
	}
	return b
}

// getWhole is get for serving: an entry that fails thumbOK (a 0-byte or
// cut file that a power cut left after put's unsynced rename, or any
// damage) is removed and counts as a miss, so the caller makes the
// thumbnail again and stores it again instead of serving the damage for
// ever. Checking on read costs less than an fsync on every put.
func (t *thumbs) getWhole(h store.Hash) []byte {
	b := t.get(h)
	if b == nil || thumbOK(b) {
		return b
	}
	if os.Remove(t.file(h)) == nil {
		t.mu.Lock()
		t.total = max(0, t.total-int64(len(b)))
		t.mu.Unlock()
	}
	return nil
}

// minThumbBytes is well below the smallest thumbnail that thumbnail
// writes (about 600 bytes for one pixel: its quantisation and Huffman
// tables), and above any file too short to be one.
const minThumbBytes = 128

// thumbOK reports whether b looks like a whole thumbnail as thumbnail
// writes it: a JPEG from its start of image (FF D8 FF) to its end of image
// (FF D9), whose headers parse and give a size within ThumbSize. It reads
// only the headers, not the pixels, so it costs little on every hit.
func thumbOK(b []byte) bool {
	if len(b) < minThumbBytes || !bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}) || !bytes.HasSuffix(b, []byte{0xff, 0xd9}) {
		return false
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	return err == nil && cfg.Width >= 1 && cfg.Height >= 1 && cfg.Width <= ThumbSize && cfg.Height <= ThumbSize
}

// put stores a thumbnail (written aside and renamed, so a reader never sees
// half a file being written) and evicts the oldest when over the cap.
// Errors are dropped: the cache only saves work. It does not sync: after a
// power cut an entry may be empty or cut, which getWhole catches.
func (t *thumbs) put(h store.Hash, b []byte) {
	if t.off != nil || t.readOnly != nil {
		return
	}
	tmp, err := os.CreateTemp(t.dir, ".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		// The folder was removed while serving (the README says that is
		// safe): make it again, and count from nothing.
		if os.MkdirAll(t.dir, 0o700) == nil { // as openThumbs makes it
			t.mu.Lock()
			t.total = 0
			t.mu.Unlock()
			tmp, err = os.CreateTemp(t.dir, ".tmp-*")
		}
	}
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), t.file(h))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(b))
	if t.total > t.cap {
		t.evict()
	}
}

// evict removes the oldest thumbnails until the folder is under 90% of its
// cap. Called with mu held.
func (t *thumbs) evict() {
	type ent struct {
		path string
		fi   fs.FileInfo
	}
	var all []ent
	var total int64
	ents, _ := os.ReadDir(t.dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && strings.HasSuffix(e.Name(), ".jpg") {
			all = append(all, ent{filepath.Join(t.dir, e.Name()), fi})
			total += fi.Size()
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].fi.ModTime().Before(all[j].fi.ModTime()) })
	for _, e := range all {
		if total <= t.cap*9/10 {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.fi.Size()
		}
	}
	t.total = total
}

// MaxThumbSource is the largest file (or sample member) a thumbnail is
// made of: it is read into memory to be decoded.
const MaxThumbSource = 256 << 20

// decodeForThumb decodes an image for a thumbnail, EXIF orientation
// applied, at the smallest size the format allows whose longer side stays
// at least minSide (JPEG's DCT scaling, a HEIC/AVIF thumbnail item, a RAW
// preview), and stops a HEIC/AVIF or JPEG decode when ctx ends. A
// variable, so that tests can count decodes.
var decodeForThumb = preprocess.DecodeReduced

// decodeSlots bounds the thumbnails being made at once in this process to
// one per core: each holds its file and its decoded pixels (a full-size
// 24 MP photo is about 200 MB while it decodes), and more at once would
// only share the same cores. The process, not a Server, owns the cores.
var decodeSlots = make(chan struct{}, runtime.NumCPU())

// Thumbnail decodes an image, applies its EXIF orientation, shrinks it to
// at most ThumbSize on its longest side (never enlarging) and encodes it
// as JPEG.
func Thumbnail(data []byte, name string) ([]byte, error) {
	return thumbnail(context.Background(), data, name)
}

func thumbnail(ctx context.Context, data []byte, name string) ([]byte, error) {
	small, err := thumbImage(ctx, data, name, ThumbSize)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: 85}); err != nil {
		return nil, fmt.Errorf("thumbnail of %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// ThumbImage decodes an image, applies its EXIF orientation and shrinks it
// to at most size pixels on its longest side (never enlarging).
func ThumbImage(data []byte, name string, size int) (*image.RGBA, error) {
	return thumbImage(context.Background(), data, name, size)
}

func thumbImage(ctx context.Context, data []byte, name string, size int) (*image.RGBA, error) {
	img, err := decodeForThumb(ctx, data, name, size)
	if err != nil {
		return nil, err
	}
	return shrink(img, size), nil
}

// shrink scales img down so that its longest side is at most size, each
// output pixel the average of the source pixels it covers (a box filter:
// no aliasing when shrinking a 4000-pixel photo 16 times). Smaller images
// are returned as they are.
func shrink(img *image.RGBA, size int) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w <= size && h <= size {
		return img
	}
	ow, oh := size, max(1, (h*size+w/2)/w)
	if h > w {
		ow, oh = max(1, (w*size+h/2)/h), size
	}
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	// Column spans: output column x covers source columns x0[x]..x0[x+1].
	x0 := make([]int, ow+1)
	for x := range x0 {
		x0[x] = x * w / ow
	}
	acc := make([]uint32, ow*3)
	for y := 0; y < oh; y++ {
		y0, y1 := y*h/oh, (y+1)*h/oh
		clear(acc)
		for sy := y0; sy < y1; sy++ {
			row := img.Pix[sy*img.Stride : sy*img.Stride+w*4]
			for x := 0; x < ow; x++ {
				var r, g, b uint32
				for sx := x0[x]; sx < x0[x+1]; sx++ {
					p := row[sx*4 : sx*4+3 : sx*4+3]
					r += uint32(p[0])
					g += uint32(p[1])
					b += uint32(p[2])
				}
				acc[x*3] += r
				acc[x*3+1] += g
				acc[x*3+2] += b
			}
		}
		dst := out.Pix[y*out.Stride:]
		for x := 0; x < ow; x++ {
			n := uint32((x0[x+1] - x0[x]) * (y1 - y0))
			dst[x*4] = uint8((acc[x*3] + n/2) / n)
			dst[x*4+1] = uint8((acc[x*3+1] + n/2) / n)
			dst[x*4+2] = uint8((acc[x*3+2] + n/2) / n)
			dst[x*4+3] = 0xff
		}
	}
	return out
}

// etag names a file's content for conditional requests.
func etag(h store.Hash, kind string) string {
	return `"` + kind + "-" + hex.EncodeToString(h[:12]) + `"`
}

// fileOrNotModified resolves id to its indexed file and sets the caching
// headers of a response about its content (kind "t" a thumbnail, "i" the
// image). ok is false when the response is already written: an error, or
// 304 for a client that holds this content.
func (s *Server) fileOrNotModified(w http.ResponseWriter, r *http.Request, id, kind string) (f indexedFile, ok bool) {
	err := s.viewID(func(snap *store.Snapshot) error {
		var err error
		f, err = s.resolve(snap, id)
		return err
	})
	if err != nil {
		fail(w, err)
		return f, false
	}
	tag := etag(f.rec.Hash, kind)
	if f.moved && noneMatch(r.Header.Values("If-None-Match"), tag) {
		// The client holds the indexed content: tell it so only once
		// the file proves it still is that.
		if err := checkContent(f); err != nil {
			fail(w, err)
			return f, false
		}
	}
	return f, !notModified(w, r, tag)
}

func (s *Server) thumb(w http.ResponseWriter, r *http.Request, id string) {
	f, ok := s.fileOrNotModified(w, r, id, "t")
	if !ok {
		return
	}
	b, err := s.thumbOf(r.Context(), f)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// thumbOf returns the thumbnail of f, from the cache or made in one of
// the decodeSlots (waiting for one as long as ctx lasts). A cached one is
// served while f is unchanged as a build sees it (its size and mtime, which
// resolve checked, and its ctime where recorded: indexedFile.moved), else
// once its content proves it unchanged; one made is made of bytes checked
// against the record's hash (readChecked). A file edited in place with its
// size, mtime and ctime all kept (possible only where no ctime is
// recorded: an older clipidx's record until a build stamps one, a system
// without ctimes) keeps its cached thumbnail, as a build keeps its vector.
func (s *Server) thumbOf(ctx context.Context, f indexedFile) ([]byte, error) {
	if b, err := s.cachedThumb(f); b != nil || err != nil {
		return b, err
	}
	select {
	case decodeSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-decodeSlots }()
	// A request for the same content may have made it during the wait.
	if b, err := s.cachedThumb(f); b != nil || err != nil {
		return b, err
	}
	var data []byte
	var name string
	var err error
	if f.frame {
		data, name, err = s.still(ctx, f) // video.go
	} else {
		data, name, err = readChecked(f, MaxThumbSource)
	}
	if err != nil {
		return nil, err
	}
	b, err := thumbnail(ctx, data, name)
	if err != nil {
		return nil, err
	}
	if s.th != nil {
		s.th.put(f.rec.Hash, b)
	}
	return b, nil
}

// cachedThumb is f's thumbnail from the cache, nil for a miss, or
// errChanged when f has moved (see thumbOf) and its content differs.
func (s *Server) cachedThumb(f indexedFile) ([]byte, error) {
	if s.th == nil {
		return nil, nil
	}
	b := s.th.getWhole(f.rec.Hash)
	if b != nil && f.moved {
		if err := checkContent(f); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// contentType is the Content-Type of an indexed file, by content first;
// never one a browser would run scripts in.
func contentType(data []byte, path string) string {
	ct := http.DetectContentType(data)
	if ct == "application/octet-stream" || strings.HasPrefix(ct, "text/") {
		if t := mime.TypeByExtension(strings.ToLower(filepath.Ext(path))); strings.HasPrefix(t, "image/") && !strings.Contains(t, "svg") {
			return t
		}
		return "application/octet-stream"
	}
	return ct
}

// image streams the indexed bytes of id from its file (or its shard's
// member), checked against the record's hash by a first pass (see
// openChecked), with Range requests answered by http.ServeContent.
func (s *Server) image(w http.ResponseWriter, r *http.Request, id string) {
	f, ok := s.fileOrNotModified(w, r, id, "i")
	if !ok {
		return
	}
	if f.frame {
		s.stillImage(w, r, f) // video.go
		return
	}
	file, src, err := openChecked(f)
	if err != nil {
		fail(w, err)
		return
	}
	defer file.Close()
	head := make([]byte, 512)
	n, _ := src.sec.ReadAt(head, 0)
	ct := contentType(head[:n], src.name)
	if !strings.HasPrefix(ct, "image/") {
		// Never let a browser render an indexed file as a page.
		w.Header().Set("Content-Disposition", "attachment")
	}
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, "", time.Unix(0, f.rec.MtimeNs), src.sec)
}
