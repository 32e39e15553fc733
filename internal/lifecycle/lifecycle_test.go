package lifecycle

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"maps"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
	"github.com/clipidx/clipidx/internal/web"
	"github.com/clipidx/clipidx/store"
)

// The test's model: vectors of dimension dim computed from a file's bytes,
// so that the vector of any record can be checked against its content.
const dim = 16

var ident = store.Identity{Model: "lifecycle-fake", Dim: dim, Preprocess: "fake/1"}

// Five kinds of content: real PNGs (the server can thumbnail them), real
// JPEGs (most of them Motion Photos: a video appended, which the server
// plays; some whose XMP names a video that is not there),
// "HEIC" files that the decoder reads only once its reach holds heic (an
// upgrade), videos (videoSampler reads them when "ffmpeg" is installed),
// and junk that no decoder reads.
var heicMagic = []byte("\x00\x00\x00\x18ftypheic")

func kindOf(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8}):
		return "jpeg"
	case bytes.HasPrefix(data, heicMagic):
		return "heic"
	case bytes.HasPrefix(data, videoMagic), liveMovie(data):
		return "video"
	}
	return "junk"
}

// liveMovie reports whether data is a Live Photo's movie the test made:
// QuickTime boxes with a content identifier, then a "video" in a free box.
func liveMovie(data []byte) bool {
	return len(data) > 12 && string(data[4:12]) == "ftypqt  " && bytes.Contains(data, videoMagic)
}

// A "video" is "FAKEVIDEO 0,2.5,7 <noise>": its frames are at the listed
// times, each a 4x4 picture made from the content and the time; one whose
// list is "BROKEN" is a video ffmpeg cannot read.
var videoMagic = []byte("FAKEVIDEO ")

// frameTimes returns the times of a video content's frames; ok is false
// for a content ffmpeg would not read.
func frameTimes(data []byte) (ts []float64, ok bool) {
	if kindOf(data) != "video" {
		return nil, false
	}
	f := strings.Fields(string(data[bytes.Index(data, videoMagic):]))
	if len(f) < 2 || f[1] == "BROKEN" {
		return nil, false
	}
	for _, s := range strings.Split(f[1], ",") {
		t, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false
		}
		ts = append(ts, t)
	}
	return ts, true
}

// frameOf is the frame at t of a video content, as the sampler returns it.
func frameOf(data []byte, t float64) video.Frame {
	h := sha256.Sum256(append(slices.Clone(data), store.FrameTime(t)...))
	rgb := bytes.Repeat(h[:], 2)[:48]
	return video.Frame{Time: t, Width: 4, Height: 4, RGB: rgb}
}

// framePixels is what the fake frame preprocessing returns for a frame's
// picture, and so the fake model's vector for it.
func framePixels(img image.Image) []float32 { return pixelsOf(img.(*image.RGBA).Pix) }

// frameHash is the content hash of the frame at t of a video whose bytes
// hash to h, as index writes it. It is part of the index's format: were it
// to change, every video of an upgraded index would be embedded again.
func frameHash(h store.Hash, t float64) store.Hash {
	return sha256.Sum256([]byte("clipidx video frame\x00" + string(h[:]) + store.FrameSep + store.FrameTime(t)))
}

// videoSampler is the fake ffmpeg. It counts the contents it samples and
// notes each frame's pixels for the fake model.
type videoSampler struct {
	enc     *countEnc
	mu      sync.Mutex
	sampled []store.Hash
}

func (s *videoSampler) Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, video.Info{}, err
	}
	h := store.Hash(sha256.Sum256(data))
	s.mu.Lock()
	s.sampled = append(s.sampled, h)
	s.mu.Unlock()
	ts, ok := frameTimes(data)
	if !ok {
		return nil, video.Info{}, fmt.Errorf("%w: moov atom not found", video.ErrNotVideo)
	}
	var out []video.Frame
	for _, t := range ts {
		fr := frameOf(data, t)
		s.enc.mu.Lock()
		s.enc.contents[pixKey(framePixels(fr.Image()))] = frameHash(h, t)
		s.enc.mu.Unlock()
		out = append(out, fr)
	}
	return out, video.Info{}, nil
}

// holdsVideo reports whether held has every frame of the video content
// data (ffmpeg would read it).
func holdsVideo(held map[store.Hash]bool, data []byte) bool {
	h := store.Hash(sha256.Sum256(data))
	ts, ok := frameTimes(data)
	return ok && !slices.ContainsFunc(ts, func(t float64) bool { return !held[frameHash(h, t)] })
}

// frameStill is the fake FrameStill of the server: the frame's picture as
// a PNG.
func frameStill(ctx context.Context, path string, t float64) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if _, ok := frameTimes(data); !ok {
		return nil, fmt.Errorf("%w: %s", video.ErrNotVideo, path)
	}
	var buf bytes.Buffer
	err = png.Encode(&buf, frameOf(data, t).Image())
	return buf.Bytes(), err
}

// videoOf is the video a record's path belongs to: the path itself, or a
// frame record's video.
func videoOf(p string) string {
	if v, _, ok := store.SplitFrame(p); ok {
		return v
	}
	return p
}

func readable(data []byte, reach []string) bool {
	k := kindOf(data)
	return k == "png" || k == "jpeg" || k == "heic" && slices.Contains(reach, "heic")
}

// pixelsOf is what the fake decoder returns for data, and the fake model's
// vector for it.
func pixelsOf(data []byte) []float32 {
	h := sha256.Sum256(data)
	px := make([]float32, dim)
	for i := range px {
		px[i] = float32(int(h[2*i])<<8|int(h[2*i+1])) - 32767.5
	}
	return px
}

func pixKey(px []float32) string {
	b := make([]byte, 0, 4*len(px))
	for _, x := range px {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return string(b)
}

// countEnc is the fake model: it returns the pixels as the vector and
// remembers which contents it embedded (through the decoder's note of
// which content gave which pixels).
type countEnc struct {
	mu       sync.Mutex
	contents map[string]store.Hash // pixKey → content hash, filled by the decoder
	embedded []store.Hash
	delay    time.Duration
	onPass   func()
}

func newEnc() *countEnc { return &countEnc{contents: map[string]store.Hash{}} }

func (e *countEnc) note(px []float32, data []byte) {
	e.mu.Lock()
	e.contents[pixKey(px)] = sha256.Sum256(data)
	e.mu.Unlock()
}

func (e *countEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	if len(pix) != n*dim {
		return nil, fmt.Errorf("fake model: %d values for %d images", len(pix), n)
	}
	time.Sleep(e.delay)
	e.mu.Lock()
	for i := range n {
		e.embedded = append(e.embedded, e.contents[pixKey(pix[i*dim:(i+1)*dim])])
	}
	e.mu.Unlock()
	if e.onPass != nil {
		e.onPass()
	}
	return slices.Clone(pix), nil
}

// decoder is the fake PreprocessFunc for a decoder that reads reach.
func decoder(enc *countEnc, reach []string) index.PreprocessFunc {
	return func(data []byte, path string) ([]float32, error) {
		switch kindOf(data) {
		case "junk", "video":
			return nil, fmt.Errorf("%w (%d bytes)", index.ErrNotImage, len(data))
		case "heic":
			if !slices.Contains(reach, "heic") {
				return nil, fmt.Errorf("%w: HEIC", index.ErrUnsupported)
			}
		}
		px := pixelsOf(data)
		enc.note(px, data)
		return px, nil
	}
}

// buildOptions are a build's options; with sampler nil, ffmpeg is not
// installed.
func buildOptions(enc *countEnc, reach []string, sampler *videoSampler) index.Options {
	o := index.Options{Encoder: enc, Preprocess: decoder(enc, reach), Identity: ident, Reach: reach,
		BatchSize: 3, CommitEvery: 4, Workers: 2}
	if sampler != nil {
		o.Video, o.PreprocessFrame = sampler, func(img image.Image) ([]float32, error) { return framePixels(img), nil }
	}
	return o
}

// sampler is the fake ffmpeg for a build, or nil while it is not installed.
func (l *lab) sampler(enc *countEnc) *videoSampler {
	if !l.ffmpeg {
		return nil
	}
	return &videoSampler{enc: enc}
}

// rec is what the index holds for one path, as the test compares it.
type rec struct {
	ok   bool
	hash store.Hash
	live bool // a Live Photo's movie left out (store.File.LiveVideo)
}

// lab is the library under test: a tree, its index, and a server over it.
type lab struct {
	t     *testing.T
	rng   *rand.Rand
	dir   string // the tree
	db    string
	reach []string
	clock time.Time // the next mtime written
	blobs map[store.Hash][]byte
	// motion maps the contents made as Motion Photos to their videos.
	motion map[store.Hash][]byte
	// frames maps the hash of each video frame made to its vector, and
	// videoOfFrame to the content hash of its video.
	frames       map[store.Hash][]float32
	videoOfFrame map[store.Hash]store.Hash
	// liveIDs maps the contents of the Live Photo stills and movies made
	// to their content identifiers.
	liveIDs map[store.Hash]string
	// liveBuilt counts the Live Photo movies builds were expected to
	// leave out.
	liveBuilt int
	ffmpeg    bool   // builds can read videos
	c         string // the folder that moves: lib/b/caf\xe9 or lib/a/caf\xe9 (a Latin-1 name)
	// watching: a watcher builds lib (TestLifecycleWatch); files change
	// only in lib's own folders.
	watching bool

	srv             *web.Server
	nasAway, extAwy bool
	reported        map[string]bool // away folders a build has reported offline
	others          []string        // folders indexed apart and merged in
	steps           []string        // what was done, printed on failure
	// since is every content the index held a vector of since it last
	// freed every unused one (a build of every indexed folder, a merge,
	// a forget): a build must not embed any of them again (a photo moved
	// out of a folder built, into one built later, takes its vector back).
	since map[store.Hash]bool
}

func (l *lab) path(rel string) string { return filepath.Join(l.dir, filepath.FromSlash(rel)) }

func (l *lab) fatalf(format string, a ...any) {
	l.t.Helper()
	tail := l.steps
	if len(tail) > 25 && os.Getenv("CLIPIDX_LIFECYCLE_ALLSTEPS") == "" {
		tail = tail[len(tail)-25:]
	}
	l.t.Fatalf("%s\nlast steps:\n  %s", fmt.Sprintf(format, a...), strings.Join(tail, "\n  "))
}

func (l *lab) step(format string, a ...any) {
	l.steps = append(l.steps, fmt.Sprintf("%d: ", len(l.steps)+1)+fmt.Sprintf(format, a...))
}

// content makes a new file content: mostly PNGs, some HEIC, some junk.
func (l *lab) content() []byte {
	var data []byte
	switch r := l.rng.Intn(24); {
	case r >= 20:
		times := "BROKEN"
		if r < 23 {
			var ts []string
			for i := range 1 + l.rng.Intn(4) {
				ts = append(ts, store.FrameTime(float64(i)*2.5+float64(l.rng.Intn(1000))/1000))
			}
			times = strings.Join(ts, ",")
		}
		data = fmt.Appendf(slices.Clone(videoMagic), "%s %s", times, strconv.FormatUint(l.rng.Uint64(), 36))
		l.noteFrames(data)
	case r < 3:
		data = l.motionPhoto(r > 0)
	case r < 15:
		data = l.randomPNG()
	case r < 18:
		data = append(slices.Clone(heicMagic), []byte(strconv.FormatUint(l.rng.Uint64(), 36))...)
	default:
		data = []byte("junk " + strconv.FormatUint(l.rng.Uint64(), 36))
	}
	l.blobs[sha256.Sum256(data)] = data
	return data
}

// noteFrames notes the frames of a video content for the fake model.
func (l *lab) noteFrames(data []byte) {
	h := sha256.Sum256(data)
	ts, _ := frameTimes(data)
	for _, t := range ts {
		l.frames[frameHash(h, t)] = framePixels(frameOf(data, t).Image())
		l.videoOfFrame[frameHash(h, t)] = h
	}
}

func (l *lab) randomPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 4+l.rng.Intn(4), 4))
	for i := range img.Pix {
		img.Pix[i] = uint8(l.rng.Intn(256))
	}
	img.Set(0, 0, color.NRGBA{uint8(l.rng.Intn(256)), 1, 2, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		l.t.Fatal(err)
	}
	return buf.Bytes()
}

// motionPhoto makes a JPEG whose XMP says a video follows it (Google's
// Motion Photo format), with that video appended when withVideo (else an
// editor dropped it); l.motion notes the video of each.
func (l *lab) motionPhoto(withVideo bool) []byte {
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = uint8(l.rng.Intn(256))
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		l.t.Fatal(err)
	}
	noise := binary.LittleEndian.AppendUint64(nil, l.rng.Uint64())
	mp4 := append(videotest.QTBox("ftyp", []byte("isom\x00\x00\x02\x00isommp41")), videotest.QTBox("moov", videotest.QTBox("udta", noise))...)
	data := videotest.WithXMP(buf.Bytes(), videotest.MotionXMP(len(mp4)))
	if withVideo {
		data = append(data, mp4...)
		l.motion[sha256.Sum256(data)] = mp4
	}
	return data
}

// livePair makes the contents of a Live Photo: a still (a PNG whose eXIf
// chunk is an iPhone's EXIF, so that the server decodes it) and a movie
// with the same content identifier, or, unless agree, one pair in four
// whose movie and still disagree (a clip beside a photo of its name).
func (l *lab) livePair(agree bool) (still, movie []byte) {
	id := fmt.Sprintf("%08X-0000-4000-8000-%012X", l.rng.Uint32(), l.rng.Uint64()&0xffffffffffff)
	mid := id
	if !agree && l.rng.Intn(4) == 0 {
		mid = id[:len(id)-1] + "Z"
	}
	p := l.randomPNG()
	tiff := videotest.AppleEXIF(id, l.rng.Intn(2) == 0)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(tiff)))
	body := append([]byte("eXIf"), tiff...)
	chunk = binary.BigEndian.AppendUint32(append(chunk, body...), crc32.ChecksumIEEE(body))
	const afterIHDR = 8 + 8 + 13 + 4
	still = append(append(slices.Clone(p[:afterIHDR]), chunk...), p[afterIHDR:]...)
	times := store.FrameTime(float64(l.rng.Intn(1000)) / 1000)
	if l.rng.Intn(2) == 0 {
		times += ",1.5"
	}
	movie = videotest.LiveMovie(fmt.Sprintf("%s%s %s", videoMagic, times, strconv.FormatUint(l.rng.Uint64(), 36)),
		"com.apple.quicktime.make", "Apple", video.ContentIDKey, mid)
	l.noteFrames(movie)
	hs, hm := sha256.Sum256(still), sha256.Sum256(movie)
	l.blobs[hs], l.liveIDs[hs] = still, id
	l.blobs[hm], l.liveIDs[hm] = movie, mid
	return still, movie
}

// addLivePair adds a Live Photo (see livePair) under a new name in folder
// d ("": one where files may be added), as an iPhone's import does.
func (l *lab) addLivePair(d string, agree bool) {
	still, movie := l.livePair(agree)
	if d == "" {
		dirs := l.dirs()
		d = dirs[l.rng.Intn(len(dirs))]
	}
	stem := l.newName(d, "")
	se := []string{".HEIC", ".heic", ".JPG", ".jpeg"}[l.rng.Intn(4)]
	me := []string{".MOV", ".mov"}[l.rng.Intn(2)]
	l.step("add the Live Photo %s%s and %s%s", stem, se, stem, me)
	l.write(l.path(stem+se), still)
	l.write(l.path(stem+me), movie)
}

// renameLivePair renames a photo and the video of its name together, to
// a new name in another folder or the same (a user tidying a Live
// Photo); false when there is no such pair.
func (l *lab) renameLivePair(files []string) bool {
	for _, p := range files {
		if !index.IsVideoName(p) {
			continue
		}
		stem := strings.TrimSuffix(p, filepath.Ext(p))
		for _, q := range files {
			if q != p && strings.TrimSuffix(q, filepath.Ext(q)) == stem && !index.IsVideoName(q) {
				dirs := l.dirs()
				to := l.newName(dirs[l.rng.Intn(len(dirs))], "")
				l.step("rename the pair %s, %s to %s.*", p, q, to)
				for _, f := range []string{p, q} {
					if err := os.Rename(l.path(f), l.path(to+filepath.Ext(f))); err != nil {
						l.t.Fatal(err)
					}
				}
				return true
			}
		}
	}
	return false
}

// liveStillOf is the photo of which the video at p (absolute) is a Live
// Photo's movie, by the test's own record of what it made: a photo in p's
// folder with p's name but for the extension (.heic, .heif, .jpg, .jpeg,
// any case) made with the movie's content identifier. "" when none.
func (l *lab) liveStillOf(p string, movie []byte) string {
	id := l.liveIDs[sha256.Sum256(movie)]
	if id == "" {
		return ""
	}
	dir, name := filepath.Split(p)
	stem := strings.ToLower(strings.TrimSuffix(name, filepath.Ext(name)))
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		ext := strings.ToLower(filepath.Ext(n))
		if !e.Type().IsRegular() || strings.ToLower(strings.TrimSuffix(n, filepath.Ext(n))) != stem ||
			(ext != ".heic" && ext != ".heif" && ext != ".jpg" && ext != ".jpeg") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil && l.liveIDs[sha256.Sum256(b)] == id {
			return n
		}
	}
	return ""
}

func (l *lab) write(p string, data []byte) {
	if err := os.WriteFile(p, data, 0o644); err != nil {
		l.t.Fatal(err)
	}
	l.touch(p)
}

// touch gives p the next mtime, so that every change is one a stat sees.
func (l *lab) touch(p string) {
	l.clock = l.clock.Add(time.Second)
	if err := os.Chtimes(p, l.clock, l.clock); err != nil {
		l.t.Fatal(err)
	}
}

// dirs are the folders where files may be added now: not those of an
// away disk.
func (l *lab) dirs() []string {
	d := []string{"lib", "lib/a", "lib/b", l.c}
	if l.watching {
		return d // the watched root's own folders
	}
	d = append(d, "lib/.private") // hidden: looked at only as a root of its own
	if !l.extAwy {
		d = append(d, "ext")
	}
	if !l.nasAway {
		d = append(d, "nas")
	}
	return append(d, l.others...)
}

// files lists the regular files in the folders of dirs.
func (l *lab) files() []string {
	var out []string
	for _, d := range l.dirs() {
		ents, _ := os.ReadDir(l.path(d))
		for _, e := range ents {
			if e.Type().IsRegular() {
				out = append(out, d+"/"+e.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

// newName is a new name in folder d with extension ext; one in eight is
// not UTF-8 (Latin-1, as old archives hold).
func (l *lab) newName(d, ext string) string {
	n := strconv.FormatUint(l.rng.Uint64()%1e6, 36)
	if l.rng.Intn(8) == 0 {
		n = "\xe9t\xe9-" + n
	}
	return d + "/" + n + ext
}

// extFor is the extension of a new file with content data.
func extFor(data []byte) string {
	switch kindOf(data) {
	case "video":
		return ".mp4"
	case "jpeg":
		return ".jpg"
	}
	return ".png"
}

// index reads every record of the index.
func (l *lab) index() map[string]rec {
	l.t.Helper()
	out := map[string]rec{}
	if _, err := os.Stat(l.db); os.IsNotExist(err) {
		return out
	}
	r, err := store.OpenReader(l.db, store.ReaderOptions{})
	if err != nil {
		l.fatalf("open index: %v", err)
	}
	defer r.Close()
	err = r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error {
			if _, live := f.LiveVideo(); live {
				out[p] = rec{live: true} // its Hash is a stamp of its still's stat
				return nil
			}
			out[p] = rec{ok: !f.Failed(), hash: f.Hash}
			if f.Failed() {
				return nil
			}
			v := s.Vector(f.Vec)
			want, ok := l.frames[f.Hash]
			if _, _, frame := store.SplitFrame(p); !frame {
				want, ok = pixelsOf(l.blobs[f.Hash]), l.blobs[f.Hash] != nil
			}
			if !ok {
				l.fatalf("%s: its hash %x is of no content or frame this test made", p, f.Hash[:6])
			}
			if cos := cosine(v, want); !(cos > 0.99999) {
				l.fatalf("%s: stored vector at cosine %.6f to its content's", p, cos)
			}
			// A photo's metadata says whether its content is a Motion Photo.
			if _, _, frame := store.SplitFrame(p); frame {
				return nil
			}
			if m, ok, err := s.Meta(p); err != nil || ok && (!m.MotionRead || m.Motion != (l.motion[f.Hash] != nil)) {
				l.fatalf("%s: metadata %+v (%v), want motion %v", p, m, err, l.motion[f.Hash] != nil)
			}
			return nil
		})
	})
	if err != nil {
		l.fatalf("read index: %v", err)
	}
	return out
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// onDisk lists the files a build of folder rel sees: every regular file
// under it, following the link lib/link when its target is there.
func (l *lab) onDisk(rel string) map[string][]byte {
	out := map[string][]byte{}
	var walk func(abs string)
	walk = func(abs string) {
		ents, err := os.ReadDir(abs)
		if err != nil {
			return
		}
		for _, e := range ents {
			p := filepath.Join(abs, e.Name())
			fi, err := os.Stat(p) // follows the link
			switch {
			case err != nil || index.Skips(l.path(rel), p): // a hidden folder
			case fi.IsDir():
				walk(p)
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					l.t.Fatal(err)
				}
				out[p] = b
			}
		}
	}
	walk(l.path(rel))
	return out
}

// away lists the folders whose disk is away now.
func (l *lab) away() []string {
	var out []string
	if l.nasAway {
		out = append(out, l.path("nas"))
	}
	if l.extAwy {
		out = append(out, l.path("lib/link"))
	}
	return out
}

func within(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return store.Within(p, d) })
}

// expectBuild is what a complete build of folder rel makes of prev.
func (l *lab) expectBuild(prev map[string]rec, rel string) map[string]rec {
	return l.expectBuildAmong(prev, prev, rel, []string{rel})
}

// expectBuildAmong is expectBuild of the root rel in a build of the roots
// all together, which started on the index start (prev is what the roots
// before rel made of it): a video copied from one to another takes its
// frames, as those of any video the index held when it started.
func (l *lab) expectBuildAmong(prev, start map[string]rec, rel string, all []string) map[string]rec {
	exp := map[string]rec{}
	for p, r := range prev {
		exp[p] = r
	}
	root := l.path(rel)
	away := l.away()
	held := false
	for p := range prev {
		held = held || store.Within(p, root)
	}
	if ents, err := os.ReadDir(root); held && (err != nil || len(ents) == 0) {
		return exp // a root that lists nothing: its disk is away
	}
	disk := l.onDisk(rel)
	framed := map[store.Hash]bool{} // the frames the index holds
	sizes := map[int]bool{}         // of the videos with frames under the roots
	for p, r := range start {
		if _, _, frame := store.SplitFrame(p); frame && r.ok {
			framed[r.hash] = true
			if slices.ContainsFunc(all, func(a string) bool { return store.Within(p, l.path(a)) }) {
				sizes[len(l.blobs[l.videoOfFrame[r.hash]])] = true
			}
		}
	}
	for p := range prev {
		v := videoOf(p)
		// What lies in a hidden folder the walk skips is kept: the index
		// holds it only as a root of its own.
		if store.Within(v, root) && disk[v] == nil && !within(v, away) && !index.Skips(root, v) {
			delete(exp, p)
		}
	}
	for p, data := range disk {
		h := sha256.Sum256(data)
		if !index.IsVideoName(p) {
			exp[p] = rec{ok: readable(data, l.reach), hash: h}
			continue
		}
		if len(data) > 0 && l.liveStillOf(p, data) != "" {
			// A Live Photo's movie, with or without ffmpeg: one record
			// that says so, in place of whatever the index held.
			for q := range prev {
				if videoOf(q) == p {
					delete(exp, q)
				}
			}
			exp[p] = rec{live: true}
			l.liveBuilt++
			continue
		}
		if !l.ffmpeg && !(sizes[len(data)] && holdsVideo(framed, data)) {
			// Not read: no video recorded under the root has its size
			// (it is not even hashed), or none in the index its bytes.
			// What the index held of it stays, but for a record that
			// calls it a Live Photo's movie, which it is not now.
			if prev[p].live {
				delete(exp, p)
			}
			continue
		}
		for q := range prev {
			if videoOf(q) == p {
				delete(exp, q)
			}
		}
		ts, ok := frameTimes(data)
		if !ok {
			exp[p] = rec{ok: false, hash: h}
		}
		for _, t := range ts {
			exp[store.FramePath(p, t)] = rec{ok: true, hash: frameHash(h, t)}
		}
	}
	return exp
}

func (l *lab) compare(what string, got, exp map[string]rec) {
	l.t.Helper()
	if bad := diff(got, exp); len(bad) > 0 {
		l.fatalf("after %s the index differs from what should be:\n  %s", what, strings.Join(bad, "\n  "))
	}
}

// diff lists how the records got differ from exp, sorted.
func diff(got, exp map[string]rec) []string {
	var bad []string
	for p, e := range exp {
		g, ok := got[p]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: missing (want ok=%v)", p, e.ok))
		case g.ok != e.ok || g.live != e.live:
			bad = append(bad, fmt.Sprintf("%s: ok=%v live=%v, want ok=%v live=%v", p, g.ok, g.live, e.ok, e.live))
		case e.ok && g.hash != e.hash:
			bad = append(bad, fmt.Sprintf("%s: the vector of older content", p))
		}
	}
	for p := range got {
		if _, ok := exp[p]; !ok {
			bad = append(bad, p+": should not be in the index")
		}
	}
	sort.Strings(bad)
	return bad
}

// checkEmbedded fails when a content was embedded twice by one build, or
// embedded although the index already held its vector: in a record of
// prev, or kept (l.held: every content the index held a vector of since
// it last freed every unused one: a file moved to a folder built later
// takes its vector back).
func (l *lab) checkEmbedded(prev map[string]rec, kept map[store.Hash]bool, embedded []store.Hash) {
	l.t.Helper()
	had := maps.Clone(kept)
	for _, r := range prev {
		if r.ok {
			had[r.hash] = true
		}
	}
	seen := map[store.Hash]bool{}
	for _, h := range embedded {
		if had[h] {
			how := "in a record"
			if kept[h] && !slices.ContainsFunc(slices.Collect(maps.Values(prev)), func(r rec) bool { return r.ok && r.hash == h }) {
				how = "no file using it"
			}
			l.fatalf("content %x embedded again although the index held its vector, %s (%s)", h[:6], how, l.holders(prev, h))
		}
		if seen[h] {
			l.fatalf("content %x embedded twice by one build (%s)", h[:6], l.holders(prev, h))
		}
		seen[h] = true
	}
}

// stored is every content hash with a vector in the index, those no file
// uses any more included, and how many of them no file uses.
func (l *lab) stored() (map[store.Hash]bool, int) {
	l.t.Helper()
	out := map[store.Hash]bool{}
	if _, err := os.Stat(l.db); os.IsNotExist(err) {
		return out, 0
	}
	r, err := store.OpenReader(l.db, store.ReaderOptions{})
	if err != nil {
		l.fatalf("open index: %v", err)
	}
	defer r.Close()
	var st store.Stats
	err = r.View(func(s *store.Snapshot) error {
		if st, err = s.Stats(); err != nil {
			return err
		}
		return s.Hashes(func(h store.Hash) error { out[h] = true; return nil })
	})
	if err != nil {
		l.fatalf("read index: %v", err)
	}
	return out, st.Queued
}

// held adds what the index holds now to l.since and returns a copy.
func (l *lab) held() map[store.Hash]bool {
	l.t.Helper()
	now, _ := l.stored()
	if l.since == nil {
		l.since = map[store.Hash]bool{}
	}
	maps.Copy(l.since, now)
	return maps.Clone(l.since)
}

// freedAll starts l.since again: the index freed every unused vector.
func (l *lab) freedAll() {
	l.t.Helper()
	l.since, _ = l.stored()
}

// coversIndex reports whether a build of rel looks at every folder the
// index holds (after it, no vector without a file is kept).
func (l *lab) coversIndex(rel string) bool {
	l.t.Helper()
	for _, root := range l.roots() {
		if !store.Within(root, l.path(rel)) || index.Skips(l.path(rel), root) || root != l.path(rel) && index.IsShardName(root) {
			return false
		}
	}
	return true
}

// holders names, for a failure message, the records of prev with the
// content h and the files on disk that hold it (or the video of which it
// is a frame).
func (l *lab) holders(prev map[string]rec, h store.Hash) string {
	var out []string
	for p, r := range prev {
		if r.hash == h {
			out = append(out, "held by "+p)
		}
	}
	want := h
	if v, ok := l.videoOfFrame[h]; ok {
		want = v
		out = append(out, fmt.Sprintf("a frame of video content %x", v[:6]))
	}
	filepath.WalkDir(l.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && sha256.Sum256(b) == want {
				out = append(out, "on disk at "+p)
			}
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// checkSampled fails when a build sampled a video content twice, or one
// whose frames the index held (a renamed or copied video takes them).
func (l *lab) checkSampled(prev map[string]rec, s *videoSampler) {
	l.t.Helper()
	if s == nil {
		return
	}
	held := map[store.Hash]bool{}
	for _, r := range prev {
		if r.ok {
			held[r.hash] = true
		}
	}
	seen := map[store.Hash]bool{}
	for _, h := range s.sampled {
		if holdsVideo(held, l.blobs[h]) {
			l.fatalf("video content %x sampled although the index held all its frames", h[:6])
		}
		if seen[h] {
			l.fatalf("video content %x sampled twice by one build", h[:6])
		}
		seen[h] = true
	}
}

func (l *lab) build(rel string) {
	l.t.Helper()
	l.step("build %s (reach %v, ffmpeg %v)", rel, l.reach, l.ffmpeg)
	prev := l.index()
	kept := l.held()
	exp := l.expectBuild(prev, rel)
	enc := newEnc()
	enc.delay = 3 * time.Millisecond // searches run between the build's commits
	vs := l.sampler(enc)
	asked := l.askDuring(prev, exp)
	sum, err := index.Build(context.Background(), l.db, []string{l.path(rel)}, buildOptions(enc, l.reach, vs))
	if err != nil {
		l.fatalf("build %s: %v", rel, err)
	}
	if err := asked(); err != nil {
		l.fatalf("serve during build %s: %v", rel, err)
	}
	l.checkEmbedded(prev, kept, enc.embedded)
	l.checkSampled(prev, vs)
	if l.coversIndex(rel) {
		if _, unused := l.stored(); unused > 0 {
			l.fatalf("build %s, of every folder indexed, left %d vectors no file uses", rel, unused)
		}
		l.freedAll()
	}
	l.checkOffline(rel, prev, sum.Offline)
	if err := store.Check(l.db); err != nil {
		l.fatalf("check after build: %v", err)
	}
	l.checkRoots(rel, sum.Offline)
	l.compare("build "+rel, l.index(), exp)
}

// checkOffline checks that each away folder that held records (prev)
// under the root rel is in a build's offline list.
func (l *lab) checkOffline(rel string, prev map[string]rec, offline []store.Offline) {
	l.t.Helper()
	away := l.away()
	if ents, err := os.ReadDir(l.path(rel)); err != nil || len(ents) == 0 {
		away = append(away, l.path(rel))
	}
	for _, d := range away {
		held := false
		for p := range prev {
			held = held || store.Within(p, d) && store.Within(d, l.path(rel))
		}
		if held && !slices.ContainsFunc(offline, func(o store.Offline) bool { return o.Dir == d }) {
			l.fatalf("build %s: %s is away with its entries, but the summary's offline list is %+v", rel, d, offline)
		}
		if held && slices.Contains(l.away(), d) {
			l.reported[d] = true
		}
	}
}

// buildAll builds every folder the index holds, together, as `clipidx
// build` without a folder does (index.WalkRoots of the indexed roots): for
// each of them what its own build would do, and every vector no file uses
// freed.
func (l *lab) buildAll() {
	l.t.Helper()
	var rels []string
	for _, r := range index.WalkRoots(l.roots()) {
		rel, err := filepath.Rel(l.dir, r)
		if err != nil {
			l.t.Fatal(err)
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	l.step("build every indexed folder %v (reach %v, ffmpeg %v)", rels, l.reach, l.ffmpeg)
	prev := l.index()
	kept := l.held()
	exp := prev
	for _, rel := range rels {
		exp = l.expectBuildAmong(exp, prev, rel, rels)
	}
	enc := newEnc()
	enc.delay = 3 * time.Millisecond
	vs := l.sampler(enc)
	asked := l.askDuring(prev, exp)
	roots := make([]string, len(rels))
	for i, rel := range rels {
		roots[i] = l.path(rel)
	}
	sum, err := index.Build(context.Background(), l.db, roots, buildOptions(enc, l.reach, vs))
	if err != nil {
		l.fatalf("build every indexed folder: %v", err)
	}
	if err := asked(); err != nil {
		l.fatalf("serve during the build of every indexed folder: %v", err)
	}
	l.checkEmbedded(prev, kept, enc.embedded)
	l.checkSampled(prev, vs)
	if _, unused := l.stored(); unused > 0 {
		l.fatalf("the build of every indexed folder left %d vectors no file uses", unused)
	}
	l.freedAll()
	for _, rel := range rels {
		l.checkOffline(rel, prev, sum.Offline)
	}
	if err := store.Check(l.db); err != nil {
		l.fatalf("check after build: %v", err)
	}
	for _, rel := range rels {
		l.checkRoots(rel, sum.Offline)
	}
	l.compare("build of every indexed folder", l.index(), exp)
}

// roots is the indexed folders, as the index lists them (sorted).
func (l *lab) roots() []string {
	l.t.Helper()
	r, err := store.OpenReader(l.db, store.ReaderOptions{})
	if err != nil {
		l.fatalf("open index: %v", err)
	}
	defer r.Close()
	var roots []string
	if err := r.View(func(s *store.Snapshot) (err error) { roots, err = s.Roots(); return err }); err != nil {
		l.fatalf("read index: %v", err)
	}
	return roots
}

// checkRoots checks what a build of rel recorded beside its records, byte
// for byte whatever the names: rel among the indexed folders (which a
// build of every folder walks again), its offline folders as the summary
// gave them.
func (l *lab) checkRoots(rel string, offline []store.Offline) {
	l.t.Helper()
	r, err := store.OpenReader(l.db, store.ReaderOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	defer r.Close()
	var roots []string
	var off []store.Offline
	err = r.View(func(s *store.Snapshot) error {
		if roots, err = s.Roots(); err != nil {
			return err
		}
		off, err = s.Offline()
		return err
	})
	if err != nil {
		l.fatalf("build %s: %v", rel, err)
	}
	if !slices.Contains(roots, l.path(rel)) {
		l.fatalf("build %s: the indexed folders %q do not hold it", rel, roots)
	}
	for _, o := range offline {
		if !slices.ContainsFunc(off, func(x store.Offline) bool { return x.Dir == o.Dir }) {
			l.fatalf("build %s: offline %q is not in the index's list %+v", rel, o.Dir, off)
		}
	}
}

// askDuring searches the open server over and over, from another
// goroutine, until the function it returns is called (when a build is
// done). Each answer must be 200 and list only records the index held
// before the build (prev) or holds after it (exp): a search sees the
// index as one commit left it. The function returns the first fault.
func (l *lab) askDuring(prev, exp map[string]rec) func() error {
	var query []byte // a photo the index holds all the while: no model needed
	kept := map[store.Hash]bool{}
	for _, r := range exp {
		kept[r.hash] = kept[r.hash] || r.ok
	}
	for p, r := range prev {
		if _, _, frame := store.SplitFrame(p); r.ok && !frame && kept[r.hash] {
			query = l.blobs[r.hash]
			break
		}
	}
	if query == nil || l.srv == nil {
		return func() error { return nil }
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			code, body := l.do("POST", "/api/search/image?k=1000", query)
			if code != http.StatusOK {
				done <- fmt.Errorf("search %d: %d %s", n, code, body)
				return
			}
			var a web.Answer
			if err := json.Unmarshal(body, &a); err != nil {
				done <- fmt.Errorf("search %d: %v", n, err)
				return
			}
			for _, r := range a.Results {
				p := resultPath(r)
				_, was := prev[p]
				_, will := exp[p]
				if !was && !will {
					done <- fmt.Errorf("search %d lists %q, a record neither before nor after the build", n, p)
					return
				}
			}
		}
	}()
	return func() error {
		close(stop)
		return <-done
	}
}

// kill runs a build of rel in a child process and kills it with SIGKILL
// mid-way (or lets it end when it has little to do), then checks that the
// index is consistent and that a build completes the job.
func (l *lab) kill(rel string) {
	l.t.Helper()
	passes := 1 + l.rng.Intn(3)
	l.step("SIGKILL a build of %s after %d passes", rel, passes)
	before := l.index()
	spec, _ := json.Marshal(childSpec{DB: l.db, Root: l.path(rel), Reach: l.reach, FFmpeg: l.ffmpeg})
	cmd := exec.Command(os.Args[0], "-test.run=^TestLifecycleChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"="+string(spec))
	out, err := cmd.StdoutPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), childPass) {
			if n++; n == passes {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
	}
	for sc.Scan() { // drain until the child is gone
	}
	cmd.Wait()
	l.checkInterrupted("SIGKILL", before, rel)
	l.build(rel) // completes it: checks against the files, and that nothing committed is embedded again
}

// checkInterrupted checks the index after a build of rel was interrupted
// (what): consistent, and every record either as it was before or as the
// build makes it, a video's records all one or all the other.
func (l *lab) checkInterrupted(what string, before map[string]rec, rel string) {
	l.t.Helper()
	// Vectors an interrupted build left queued for GC are fine: the next
	// build frees them.
	r, err := store.OpenReader(l.db, store.ReaderOptions{})
	if err != nil {
		l.fatalf("open after %s: %v", what, err)
	}
	err = r.View(func(s *store.Snapshot) error { return s.Check(true) })
	r.Close()
	if err != nil {
		l.fatalf("check after %s: %v", what, err)
	}
	after := l.index()
	exp := l.expectBuild(before, rel)
	for p, r := range after {
		if b, ok := before[p]; ok && b == r {
			continue
		}
		if e, ok := exp[p]; !ok || e.ok != r.ok || r.ok && e.hash != r.hash {
			l.fatalf("after %s %s holds a record no build of the files makes", what, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			if _, ok := exp[p]; ok {
				l.fatalf("after %s the record of %s is gone, though a build keeps it", what, p)
			}
		}
	}
	// A video's records are all as they were or all as the build makes
	// them: its frames are committed together.
	was, will := videoRecords(before), videoRecords(exp)
	for v, got := range videoRecords(after) {
		if !maps.Equal(got, was[v]) && !maps.Equal(got, will[v]) {
			l.fatalf("after %s the records of video %s are neither as they were nor as a build makes them: %v", what, v, got)
		}
	}
}

// stop runs a build of rel and stops it (its context cancelled, as ^C
// does) after a few encoder passes, then checks what it left and that a
// build completes the job.
func (l *lab) stop(rel string) {
	l.t.Helper()
	passes := 1 + l.rng.Intn(3)
	l.step("stop a build of %s after %d passes (ffmpeg %v)", rel, passes, l.ffmpeg)
	before := l.index()
	kept := l.held()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	enc := newEnc()
	n := 0
	enc.onPass = func() {
		if n++; n == passes {
			cancel()
		}
	}
	o := buildOptions(enc, l.reach, l.sampler(enc))
	o.BatchSize, o.CommitEvery = 1, 1
	// A stopped build returns the context's error alone: one joined with
	// another is a failure the stop would hide (a commit that failed).
	_, err := index.Build(ctx, l.db, []string{l.path(rel)}, o)
	if err != nil && err != context.Canceled {
		l.fatalf("stopped build of %s: %v", rel, err)
	}
	l.checkEmbedded(before, kept, enc.embedded)
	l.checkInterrupted("a stop", before, rel)
	l.build(rel)
}

const (
	envChild  = "CLIPIDX_LIFECYCLE_CHILD"
	childPass = "lifecycle-child: pass"
)

type childSpec struct {
	DB, Root string
	Reach    []string
	FFmpeg   bool
}

// videoRecords groups the records of videos (frames, or a failure under
// the video's path) by video.
func videoRecords(recs map[string]rec) map[string]map[string]rec {
	out := map[string]map[string]rec{}
	for p, r := range recs {
		if v := videoOf(p); index.IsVideoName(v) {
			if out[v] == nil {
				out[v] = map[string]rec{}
			}
			out[v][p] = r
		}
	}
	return out
}

// TestLifecycleChild is the build that the lifecycle test kills.
func TestLifecycleChild(t *testing.T) {
	js := os.Getenv(envChild)
	if js == "" {
		t.Skip("the child process of TestLifecycle's SIGKILL step")
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		t.Fatal(err)
	}
	enc := newEnc()
	enc.delay = 20 * time.Millisecond
	enc.onPass = func() { fmt.Printf("%s\n", childPass); os.Stdout.Sync() }
	var vs *videoSampler
	if spec.FFmpeg {
		vs = &videoSampler{enc: enc}
	}
	o := buildOptions(enc, spec.Reach, vs)
	o.BatchSize, o.CommitEvery = 1, 1
	if _, err := index.Build(context.Background(), spec.DB, []string{spec.Root}, o); err != nil {
		t.Fatal(err)
	}
}

// merge indexes a new folder into an index of its own and merges it in.
func (l *lab) merge() {
	name := fmt.Sprintf("other%d", len(l.others))
	l.step("merge a new folder %s", name)
	if err := os.MkdirAll(l.path(name), 0o755); err != nil {
		l.t.Fatal(err)
	}
	for range 2 + l.rng.Intn(4) {
		data := l.content()
		l.write(l.path(l.newName(name, extFor(data))), data)
	}
	odb := filepath.Join(l.dir, name+".db")
	enc := newEnc()
	if _, err := index.Build(context.Background(), odb, []string{l.path(name)}, buildOptions(enc, l.reach, l.sampler(enc))); err != nil {
		l.fatalf("build %s: %v", name, err)
	}
	prev := l.index()
	exp := l.expectBuild(prev, name) // a fresh folder: what its own build made
	if _, err := store.Merge(l.db, []string{odb}, store.WriterOptions{}); err != nil {
		l.fatalf("merge: %v", err)
	}
	if err := store.Check(l.db); err != nil {
		l.fatalf("check after merge: %v", err)
	}
	l.freedAll()
	l.others = append(l.others, name)
	l.compare("merge", l.index(), exp)
}

func (l *lab) forget(rel string) {
	l.step("forget %s", rel)
	prev := l.index()
	if _, err := store.Forget(l.db, []string{l.path(rel)}, store.WriterOptions{}); err != nil {
		l.fatalf("forget %s: %v", rel, err)
	}
	if err := store.Check(l.db); err != nil {
		l.fatalf("check after forget: %v", err)
	}
	l.freedAll()
	for p := range prev {
		if store.Within(p, l.path(rel)) {
			delete(prev, p)
		}
	}
	l.compare("forget "+rel, l.index(), prev)
}

// serveCheck asks the open server for every indexed record: each one whose
// file is on disk as indexed is served (200 and the file's bytes; a PNG's
// thumbnail too), and similar images work from the stored vector of any
// record, on disk or not.
func (l *lab) serveCheck() {
	l.t.Helper()
	recs := l.index()
	var any *rec // a photo's record: its bytes are the query
	for p, r := range recs {
		if _, _, frame := store.SplitFrame(p); r.ok && !frame {
			any = &r
			break
		}
	}
	if any == nil {
		return
	}
	code, body := l.do("POST", "/api/search/image?k=1000", l.blobs[any.hash])
	if code != http.StatusOK {
		l.fatalf("image search: %d %s", code, body)
	}
	var a web.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		l.fatalf("image search: %v", err)
	}
	ids := map[string]string{}
	results := map[string]web.Result{}
	offline := map[string]bool{}
	listed := map[string]string{} // a video's frame among the results: one, its best
	for i, r := range a.Results {
		if r.PathBytes != nil && !strings.ContainsRune(r.Path, '\uFFFD') {
			l.fatalf("serve: %q has path_bytes but a UTF-8 path", r.Path)
		}
		r.Path = resultPath(r)
		a.Results[i].Path = r.Path
		ids[r.Path] = r.ID
		results[r.Path] = r
		offline[r.Path] = r.Offline != ""
		if v, _, frame := store.SplitFrame(r.Path); frame {
			if listed[v] != "" {
				l.fatalf("serve: video %s is listed twice (%s and %s)", v, listed[v], r.Path)
			}
			listed[v] = r.Path
		}
	}
	paths := make([]string, 0, len(recs))
	for p := range recs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var ok []string
	for _, p := range paths {
		r := recs[p]
		if !r.ok {
			continue
		}
		if v, t, frame := store.SplitFrame(p); frame {
			switch q := listed[v]; {
			case q == "":
				l.fatalf("serve: indexed video %s is not among the results of a search for all", v)
			case q == p:
				if within(p, slices.Collect(maps.Keys(l.reported))) && a.Results[slices.IndexFunc(a.Results, func(r web.Result) bool { return r.Path == p })].Offline == "" {
					l.fatalf("serve: %s, whose disk a build found away, is not marked offline", p)
				}
				l.serveFrame(p, ids[p], v, t, r)
			}
			continue
		}
		ok = append(ok, p)
		id, found := ids[p]
		if !found {
			l.fatalf("serve: indexed %s is not among the results of a search for all", p)
		}
		if within(p, slices.Collect(maps.Keys(l.reported))) && !offline[p] {
			l.fatalf("serve: %s, whose disk a build found away, is not marked offline", p)
		}
		data, err := os.ReadFile(p)
		if err != nil || sha256.Sum256(data) != r.hash {
			continue // changed or away since it was indexed: not servable until the next build
		}
		code, body := l.do("GET", "/image/"+id, nil)
		if code != http.StatusOK || !bytes.Equal(body, data) {
			l.fatalf("serve: /image of indexed %s answered %d (%d bytes, want its %d)", p, code, len(body), len(data))
		}
		if kindOf(data) == "png" {
			if code, body := l.do("GET", "/thumb/"+id, nil); code != http.StatusOK {
				l.fatalf("serve: /thumb of indexed %s answered %d %s", p, code, body)
			}
		}
		if v := l.motion[r.hash]; v != nil || results[p].Motion {
			code, body := l.do("GET", "/live/"+id, nil)
			if res := results[p]; !res.Motion || res.Live != "/live/"+id || code != http.StatusOK || !bytes.Equal(body, v) {
				l.fatalf("serve: Motion Photo %s (motion %v, live %q): /live answered %d (%d bytes, want its video's %d)", p, res.Motion, res.Live, code, len(body), len(v))
			}
		}
	}
	p := ok[l.rng.Intn(len(ok))]
	if code, body := l.do("GET", "/api/similar?k=1000&id="+ids[p], nil); code != http.StatusOK {
		l.fatalf("serve: similar images of %s answered %d %s", p, code, body)
	}
}

// serveFrame checks that the server gives an indexed frame (record p, id)
// of video v at t: its picture, its thumbnail, and the video's bytes.
func (l *lab) serveFrame(p, id, v string, t float64, r rec) {
	l.t.Helper()
	data, err := os.ReadFile(v)
	if err != nil || frameHash(sha256.Sum256(data), t) != r.hash {
		return // changed or away since it was indexed
	}
	still, err := frameStill(context.Background(), v, t)
	if err != nil {
		l.t.Fatal(err)
	}
	if code, body := l.do("GET", "/image/"+id, nil); code != http.StatusOK || !bytes.Equal(body, still) {
		l.fatalf("serve: /image of indexed frame %s answered %d (%d bytes, want the %d of its picture)", p, code, len(body), len(still))
	}
	if code, body := l.do("GET", "/thumb/"+id, nil); code != http.StatusOK {
		l.fatalf("serve: /thumb of indexed frame %s answered %d %s", p, code, body)
	}
	if code, body := l.do("GET", "/video/"+id, nil); code != http.StatusOK || !bytes.Equal(body, data) {
		l.fatalf("serve: /video of indexed frame %s answered %d (%d bytes, want its video's %d)", p, code, len(body), len(data))
	}
}

// resultPath is a result's path: its bytes when they are not UTF-8.
func resultPath(r web.Result) string {
	if r.PathBytes != nil {
		return string(r.PathBytes)
	}
	return r.Path
}

const addr = "127.0.0.1:7357"

func (l *lab) do(method, target string, body []byte) (int, []byte) {
	req := httptest.NewRequest(method, "http://"+addr+target, bytes.NewReader(body))
	w := httptest.NewRecorder()
	l.srv.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

// newLab makes a lab in a temporary folder: the tree lib (a, b, b/c, and
// link → ext) and nas, with 12 files. The seed is CLIPIDX_LIFECYCLE_SEED's
// or the clock's, logged when the test fails with how to replay it.
func newLab(t *testing.T, test string, steps int) *lab {
	seed := envInt("CLIPIDX_LIFECYCLE_SEED", time.Now().UnixNano())
	l := &lab{t: t, rng: rand.New(rand.NewSource(seed)), dir: t.TempDir(), reach: []string{"png"},
		clock: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), blobs: map[store.Hash][]byte{}, reported: map[string]bool{},
		frames: map[store.Hash][]float32{}, videoOfFrame: map[store.Hash]store.Hash{}, liveIDs: map[store.Hash]string{}, motion: map[store.Hash][]byte{}, ffmpeg: true, c: "lib/b/caf\xe9"}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (replay: CLIPIDX_LIFECYCLE_SEED=%d CLIPIDX_LIFECYCLE_STEPS=%d go test ./internal/lifecycle -run '%s$')", seed, seed, steps, test)
		}
	})
	// The tree may hold a link to /tmp's real path: resolve it once.
	dir, err := filepath.EvalSymlinks(l.dir)
	if err != nil {
		t.Fatal(err)
	}
	l.dir = dir
	l.db = filepath.Join(l.dir, "index.db")
	for _, d := range []string{"lib/a", l.c, "lib/.private", "ext", "nas"} {
		if err := os.MkdirAll(l.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../ext", l.path("lib/link")); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		d := l.dirs()
		data := l.content()
		l.write(l.path(l.newName(d[l.rng.Intn(len(d))], extFor(data))), data)
	}
	l.addLivePair("lib", true)
	return l
}

// TestLifecycle lives a library's life. CLIPIDX_LIFECYCLE_STEPS sets the
// number of steps (default 200), CLIPIDX_LIFECYCLE_SEED replays a run; the
// seed is printed when it fails, with the last 25 steps (every step with
// CLIPIDX_LIFECYCLE_ALLSTEPS=1).
func TestLifecycle(t *testing.T) {
	if os.Getenv(envChild) != "" {
		t.Skip("in the child process")
	}
	steps := int(envInt("CLIPIDX_LIFECYCLE_STEPS", 200))
	if testing.Short() {
		steps = 40
	}
	l := newLab(t, "TestLifecycle", steps)
	var err error
	l.srv, err = web.New(web.Options{DB: l.db, Addr: addr, FrameStill: frameStill})
	if err != nil {
		t.Fatal(err)
	}
	l.build("lib")
	l.build("nas")

	for range steps {
		l.randomStep()
		if l.rng.Intn(3) == 0 {
			l.serveCheck()
		}
	}
	// Bring every disk back, build everything: the whole tree is indexed.
	if l.nasAway {
		l.toggleNAS()
	}
	if l.extAwy {
		l.toggleExt()
	}
	if !l.ffmpeg {
		l.toggleFFmpeg()
	}
	// And a Live Photo more, so that every run ends with one to check.
	l.addLivePair("lib/a", true)
	for _, r := range append([]string{"lib", "nas", "lib/.private"}, l.others...) {
		l.build(r)
	}
	l.serveCheck()
	if l.liveBuilt == 0 {
		t.Error("no build met a Live Photo's movie: the run did not test them")
	}
}

func (l *lab) randomStep() {
	switch r := l.rng.Intn(100); {
	case r < 44:
		l.fileStep(r)
	case r < 62:
		targets := append([]string{"lib", "lib", "nas", "lib/a", "lib/b", l.c, "lib/.private", "*"}, l.others...)
		if t := targets[l.rng.Intn(len(targets))]; t == "*" {
			l.buildAll()
		} else {
			l.build(t)
		}
	case r < 67:
		l.toggleNAS()
	case r < 72:
		l.toggleExt()
	case r < 75:
		if !slices.Contains(l.reach, "heic") {
			l.step("upgrade: the decoder now reads HEIC")
			l.reach = []string{"heic", "png"}
		}
	case r < 78:
		l.kill("lib")
	case r < 81:
		l.stop("lib")
	case r < 85:
		l.merge()
	case r < 88:
		targets := append([]string{"lib/a", "lib/b", "lib/.private", "nas"}, l.others...)
		l.forget(targets[l.rng.Intn(len(targets))])
	case r < 91:
		l.toggleFFmpeg()
	case r < 94:
		l.moveFolder()
	case r < 97:
		l.compact()
	default:
		l.step("serve check")
		l.serveCheck()
	}
}

// fileStep changes the files (r < 44 picks what): one added (sometimes
// twice), changed, copied, renamed or deleted.
func (l *lab) fileStep(r int) {
	files := l.files()
	pick := func() string { return files[l.rng.Intn(len(files))] }
	dirs := l.dirs()
	switch {
	case r < 3:
		l.addLivePair("", false)
	case r < 14 || len(files) == 0:
		data := l.content()
		p := l.newName(dirs[l.rng.Intn(len(dirs))], extFor(data))
		l.step("add %s (%s)", p, kindOf(data))
		l.write(l.path(p), data)
		if l.rng.Intn(4) == 0 { // imported twice
			q := l.newName(dirs[l.rng.Intn(len(dirs))], extFor(data))
			l.step("add %s, the same content", q)
			l.write(l.path(q), data)
		}
	case r < 18:
		p, data := pick(), l.content()
		l.step("change %s (%s)", p, kindOf(data))
		l.write(l.path(p), data)
	case r < 20:
		l.rewriteKeepingStat(pick())
	case r < 22:
		l.swapKeepingStat(files)
	case r < 28:
		p := pick()
		q := l.newName(dirs[l.rng.Intn(len(dirs))], filepath.Ext(p))
		l.step("copy %s to %s", p, q)
		b, err := os.ReadFile(l.path(p))
		if err != nil {
			l.t.Fatal(err)
		}
		l.write(l.path(q), b)
	case r < 30 && l.renameLivePair(files):
	case r < 36:
		p := pick()
		q := l.newName(dirs[l.rng.Intn(len(dirs))], filepath.Ext(p))
		l.step("rename %s to %s", p, q)
		if err := os.Rename(l.path(p), l.path(q)); err != nil {
			l.t.Fatal(err)
		}
	case r < 44:
		p := pick()
		l.step("delete %s", p)
		if err := os.Remove(l.path(p)); err != nil {
			l.t.Fatal(err)
		}
	}
}

// rewriteKeepingStat gives p other bytes of the same size and puts its
// mtime back, as exiftool -P does when it fixes a date or an orientation.
func (l *lab) rewriteKeepingStat(p string) {
	fi, err := os.Stat(l.path(p))
	if err != nil {
		l.t.Fatal(err)
	}
	for range 64 {
		data := l.content()
		if int64(len(data)) != fi.Size() || sha256.Sum256(data) == l.hashOf(p) || kindOf(data) == "video" {
			continue
		}
		l.step("rewrite %s (%s), its size and mtime kept", p, kindOf(data))
		coarseTick()
		if err := os.WriteFile(l.path(p), data, 0o644); err != nil {
			l.t.Fatal(err)
		}
		if err := os.Chtimes(l.path(p), fi.ModTime(), fi.ModTime()); err != nil {
			l.t.Fatal(err)
		}
		return
	}
}

// swapKeepingStat swaps the names of two files of one size, each name
// keeping its mtime: a renamer that numbers photos again, of a burst whose
// files share their size and time.
func (l *lab) swapKeepingStat(files []string) {
	bySize := map[int64][]string{}
	for _, p := range files {
		if fi, err := os.Stat(l.path(p)); err == nil && !index.IsVideoName(p) {
			bySize[fi.Size()] = append(bySize[fi.Size()], p)
		}
	}
	var pairs [][]string
	for _, ps := range bySize {
		for i := 0; i+1 < len(ps); i++ {
			if l.hashOf(ps[i]) != l.hashOf(ps[i+1]) && filepath.Ext(ps[i]) == filepath.Ext(ps[i+1]) {
				pairs = append(pairs, ps[i:i+2])
			}
		}
	}
	if len(pairs) == 0 {
		return
	}
	slices.SortFunc(pairs, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	pq := pairs[l.rng.Intn(len(pairs))]
	p, q := l.path(pq[0]), l.path(pq[1])
	l.step("swap %s and %s, each name keeping its size and mtime", pq[0], pq[1])
	coarseTick()
	fp, err := os.Stat(p)
	if err != nil {
		l.t.Fatal(err)
	}
	fq, err := os.Stat(q)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, mv := range [][2]string{{p, p + ".swap"}, {q, p}, {p + ".swap", q}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			l.t.Fatal(err)
		}
	}
	for _, pt := range []struct {
		path string
		t    time.Time
	}{{p, fp.ModTime()}, {q, fq.ModTime()}} {
		if err := os.Chtimes(pt.path, pt.t, pt.t); err != nil {
			l.t.Fatal(err)
		}
	}
}

// coarseTick waits out the clock tick of the last build's reads: a kernel
// without fine-grained timestamps (Linux before 6.13) gives a change made
// within the tick in which a build read the file the ctime it read, and
// the change would go unseen (as it would by its mtime).
func coarseTick() { time.Sleep(25 * time.Millisecond) }

// hashOf is the SHA-256 of the file at rel.
func (l *lab) hashOf(rel string) store.Hash {
	b, err := os.ReadFile(l.path(rel))
	if err != nil {
		l.t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// moveFolder moves the folder c, with what it holds, from lib/b to lib/a
// or back, under another name (a user tidying up).
func (l *lab) moveFolder() {
	to := "lib/a/caf\xe9"
	if l.c == to {
		to = "lib/b/caf\xe9"
	}
	l.step("move folder %s to %s", l.c, to)
	if err := os.Rename(l.path(l.c), l.path(to)); err != nil {
		l.t.Fatal(err)
	}
	l.c = to
}

// toggleFFmpeg uninstalls or installs ffmpeg: without it builds leave
// videos as the index holds them.
func (l *lab) toggleFFmpeg() {
	l.ffmpeg = !l.ffmpeg
	l.step("ffmpeg installed: %v", l.ffmpeg)
}

// toggleNAS unmounts or mounts the "NAS": its folder stays, empty, while
// the disk is away.
func (l *lab) toggleNAS() {
	nas, away := l.path("nas"), l.path("nas.away")
	if l.nasAway {
		l.step("the NAS is back")
		delete(l.reported, nas)
		if err := os.Remove(nas); err != nil {
			l.t.Fatal(err)
		}
		if err := os.Rename(away, nas); err != nil {
			l.t.Fatal(err)
		}
	} else {
		l.step("the NAS is away (its mount point lists nothing)")
		if err := os.Rename(nas, away); err != nil {
			l.t.Fatal(err)
		}
		if err := os.Mkdir(nas, 0o755); err != nil {
			l.t.Fatal(err)
		}
	}
	l.nasAway = !l.nasAway
}

// toggleExt takes away or brings back the target of the link lib/link.
func (l *lab) toggleExt() {
	ext, away := l.path("ext"), l.path("ext.away")
	if l.extAwy {
		l.step("the link's target is back")
		delete(l.reported, l.path("lib/link"))
		if err := os.Rename(away, ext); err != nil {
			l.t.Fatal(err)
		}
	} else {
		l.step("the link's target is gone")
		if err := os.Rename(ext, away); err != nil {
			l.t.Fatal(err)
		}
	}
	l.extAwy = !l.extAwy
}
