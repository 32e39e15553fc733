package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clipidx/clipidx/internal/ctime"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// An id is a keyed hash of an indexed path with a key drawn at start: it
// says nothing about the path, cannot be forged for a path outside the
// index, and is resolved only by looking it up among the index's files.
const idLen = 16 // base64url characters (96 bits)

// errGone is a request for an id that is not (or no longer) a servable
// indexed file: 404. The errors below wrap it to say why: the file is
// listed by a search, but what is on disk is no longer what was indexed.
var errGone = errors.New("no such image in the index")

// errDamaged is a similar-images request for a file whose stored vector is
// damaged on disk: 500, as nothing the client sends mends it.
var errDamaged = errors.New("the index's vector of this image is damaged (not a unit vector): `clipidx status --check` lists the damage, `clipidx build --reindex` starts the index over")

var (
	errRemoved  = fmt.Errorf("%w: the file was removed or moved since it was indexed (a build of its folder updates the index)", errGone)
	errChanged  = fmt.Errorf("%w: the file changed since it was indexed (a build of its folder indexes it again)", errGone)
	errOutside  = fmt.Errorf("%w: the file now lies outside the indexed folders", errGone)
	errNoFFmpeg = fmt.Errorf("%w: the picture of a video frame needs ffmpeg, which this server did not find (install it or give serve --ffmpeg DIR, then start serve again); the video itself plays", errGone)
	errAway     = fmt.Errorf("%w: the file's folder is away (its disk unplugged or unmounted, as the last build found it); it is kept in the index and served again when the folder is back", errGone)
	errDenied   = fmt.Errorf("%w: the file cannot be read (permission denied)", errGone)
)

// missing is the reason a file of record p cannot be found or opened (err
// from the system): its folder away, as the index records it; permission
// denied; or else removed.
func missing(snap *store.Snapshot, p string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return errDenied
	}
	if snap != nil {
		if off, oerr := snap.Offline(); oerr == nil {
			if _, ok := store.OfflineFor(off, p); ok {
				return errAway
			}
		}
	}
	return errRemoved
}

// idMap resolves ids. Every id the server answers (Server.answer) is
// kept with its path, so a request for it costs one map read and the
// record's lookup (indexed), however large the index and however often a
// build commits. An id the server never answered (one computed from a
// path) is found by listing the index: once per state of the index, in a
// read session of its own, hashed after that session ends, while other
// lookups go on. A listing also drops the ids of paths no longer indexed;
// answers that grow the map past its bound (idMap.over) list the index
// again for that alone (Server.keep), so files added and forgotten by
// build after build do not stay in memory for the life of the server.
type idMap struct {
	key []byte

	mu sync.Mutex
	// known maps ids to paths: those of the last listing, and each path
	// answered since. A path no longer indexed stays until the next
	// listing; indexed finds no record for it.
	known map[idKey]string
	// base is the size of known after the last listing (0 before one).
	base int
	// listed is the Generation of the index the last listing read: an id
	// not in known is in no record of that state ("" = none yet).
	listed string
	// started counts the listings begun; done is the number of the last
	// one finished, err its error. One runs at a time: running is closed
	// when it ends (nil when none runs), and added keeps the paths
	// answered meanwhile, which its result must keep.
	started, done uint64
	err           error
	running       chan struct{}
	added         map[idKey]string
}

// idKey is an id decoded: the first 96 bits of the path's keyed hash.
type idKey [idLen * 6 / 8]byte

func (m *idMap) sum(h hash.Hash, path string) idKey {
	h.Reset()
	io.WriteString(h, path)
	var k idKey
	copy(k[:], h.Sum(nil))
	return k
}

func (m *idMap) id(path string) string {
	k := m.sum(hmac.New(sha256.New, m.key), path)
	return base64.RawURLEncoding.EncodeToString(k[:])
}

// answered returns the ids of paths, records of the index being answered,
// and keeps them: a later request for one finds it without a listing.
func (m *idMap) answered(paths []string) []string {
	h := hmac.New(sha256.New, m.key)
	keys := make([]idKey, len(paths))
	ids := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = m.sum(h, p)
		ids[i] = base64.RawURLEncoding.EncodeToString(keys[i][:])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known == nil {
		m.known = map[idKey]string{}
	}
	for i, p := range paths {
		m.known[keys[i]] = p
		if m.added != nil {
			m.added[keys[i]] = p
		}
	}
	return ids
}

// idSlack is how many ids answers may add to the map beyond twice its
// size after the last listing before it is listed again (idMap.over): the
// map holds at most about twice the index's paths plus idSlack, and a
// listing, which hashes every path, comes after at least as many new
// answered paths as the index held, or idSlack, whichever is more.
const idSlack = 1 << 12

// over reports whether answers have grown known past its bound. The
// caller holds mu.
func (m *idMap) over() bool { return len(m.known) > 2*m.base+idSlack }

// trim lists the index db (refresh) when answers have grown known past
// its bound, unless a listing is under way (it will drop the ids of the
// paths gone): the ids of paths no longer indexed are dropped.
func (m *idMap) trim(db string, timeout time.Duration) error {
	m.mu.Lock()
	due := m.over() && m.running == nil
	seen := m.started
	m.mu.Unlock()
	if !due {
		return nil
	}
	return m.refresh(db, seen, timeout)
}

// keep returns the ids of paths, records of the index being answered, and
// keeps them (idMap.answered), listing the index when they grow the map
// past its bound (idMap.trim). A listing that fails leaves the map as it
// is: the answer stands, and the next one over the bound tries again.
func (s *Server) keep(paths []string) []string {
	ids := s.ids.answered(paths)
	s.ids.trim(s.o.DB, s.o.OpenTimeout) // its error: see above
	return ids
}

// validID reports whether id has the shape of an id (no path characters).
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// unlisted is lookup's error for an id that is not known while the index
// s was read from (Generation) has not been listed: a listing begun after
// seen listings (refresh) may find it. It is errGone to a caller that
// does not list (a request answers 404 when the listing does not find it).
type unlisted struct {
	db   string
	seen uint64
}

func (u *unlisted) Error() string { return errGone.Error() }
func (u *unlisted) Unwrap() error { return errGone }

// lookup returns the path of id as a snapshot s of the index db sees it:
// a known id is taken as it is (the caller checks that s holds its
// record); another is errGone when s is the state last listed, else an
// *unlisted error. It reads no record of the index, so it costs the same
// whatever the index's size, and a commit does not make it list again.
func (m *idMap) lookup(db string, s *store.Snapshot, id string) (string, error) {
	if !validID(id) {
		return "", errGone
	}
	var k idKey
	if _, err := base64.RawURLEncoding.Decode(k[:], []byte(id)); err != nil {
		return "", errGone
	}
	m.mu.Lock()
	p, ok := m.known[k]
	listed, seen := m.listed, m.started
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	// The snapshot's own state, not a stat of the path: a file moved to
	// the path after the snapshot began (merge, mv) would take the
	// listing of the old one for the new one's, for good.
	if listed != "" && listed == s.Generation() {
		return "", errGone
	}
	return "", &unlisted{db: db, seen: seen}
}

// refresh makes sure a listing of the index db begun after seen listings
// has ended, running one when none has (in a read session of its own,
// waiting at most timeout for the index) or waiting for the one under
// way. Lookups go on meanwhile with what is known.
func (m *idMap) refresh(db string, seen uint64, timeout time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.done <= seen {
		if ch := m.running; ch != nil {
			m.mu.Unlock()
			<-ch
			m.mu.Lock()
			continue
		}
		m.started++
		n, ch := m.started, make(chan struct{})
		m.running, m.added = ch, map[idKey]string{}
		m.mu.Unlock()
		known, gen, err := m.list(db, timeout)
		m.mu.Lock()
		if err == nil {
			for k, p := range m.added {
				known[k] = p
			}
			m.known, m.listed, m.base = known, gen, len(known)
		}
		m.running, m.added = nil, nil
		m.done, m.err = n, err
		close(ch)
	}
	return m.err
}

// list reads the paths of the index db's records that have a vector, and
// its Generation, in one read session, and hashes them once it has ended:
// a commit waits for the read only.
func (m *idMap) list(db string, timeout time.Duration) (map[idKey]string, string, error) {
	rd, err := store.OpenReader(db, store.ReaderOptions{Timeout: timeout})
	if err != nil {
		return nil, "", err
	}
	var paths []string
	var gen string
	err = rd.View(func(s *store.Snapshot) error {
		gen = s.Generation()
		return s.Files("", func(p string, f store.File) error {
			if !f.Failed() {
				paths = append(paths, p)
			}
			return nil
		})
	})
	if err := errors.Join(err, rd.Close()); err != nil {
		return nil, "", err
	}
	known := make(map[idKey]string, len(paths))
	h := hmac.New(sha256.New, m.key)
	for _, p := range paths {
		known[m.sum(h, p)] = p
	}
	return known, gen, nil
}

// viewID is view for a request naming an id (fn looks it up through
// indexed): when the id is not known and the index has changed since it
// was last listed, the index is listed (outside fn's read session) and fn
// runs once more. An id still not found then is errGone.
func (s *Server) viewID(fn func(*store.Snapshot) error) error {
	err := s.view(fn)
	var u *unlisted
	if !errors.As(err, &u) {
		return err
	}
	if err := s.ids.refresh(u.db, u.seen, s.o.OpenTimeout); err != nil {
		return err
	}
	return s.view(fn)
}

// indexed returns the path and record of id, without looking at the file:
// enough for what needs only the stored vector (similar images). It runs
// in viewID's read, which lists the index when id is not known.
func (s *Server) indexed(snap *store.Snapshot, id string) (string, store.File, error) {
	p, err := s.ids.lookup(s.o.DB, snap, id)
	if err != nil {
		return "", store.File{}, err
	}
	rec, ok, err := snap.File(p)
	if err != nil {
		return "", store.File{}, err
	}
	if !ok || rec.Failed() {
		return "", store.File{}, errGone
	}
	return p, rec, nil
}

// indexedFile is an indexed record checked for serving: a file, or a
// webdataset sample (SHARD.tar#KEY) served from its shard.
type indexedFile struct {
	path string // as indexed
	rec  store.File
	real string // the file, or the sample's shard, with symbolic links resolved
	key  string // the sample's key in its shard; "" for a file
	// frame is set for a video's frame (VIDEO#t=S): real is the video,
	// t the frame's time. Its record carries the video's size and mtime,
	// and a hash of its own (see index), not the video's.
	frame bool
	t     float64
	// moved is set for a file (not a sample, not a frame) whose status
	// change time is no longer the one recorded, both known: changed as a
	// build sees it (exiftool -P rewrites a file and puts its size and
	// mtime back), though a chmod moves it too, so its content must prove
	// it unchanged (checkContent) before anything made of it earlier is
	// served (a cached thumbnail, a 304).
	moved bool
}

// resolve finds id's record and checks that it is still what was indexed
// (a file's size and modification time as recorded; a sample's shard's
// modification time, which its records carry) and that the file or shard
// may be served (inRoots). The content hash is checked when the bytes are
// read (openChecked, readChecked), or before a thumbnail made earlier is
// served when the file's ctime moved (indexedFile.moved).
func (s *Server) resolve(snap *store.Snapshot, id string) (indexedFile, error) {
	p, rec, err := s.indexed(snap, id)
	if err != nil {
		return indexedFile{}, err
	}
	return servable(snap, p, rec)
}

// servable checks the record rec of path p for serving (see resolve).
func servable(snap *store.Snapshot, p string, rec store.File) (indexedFile, error) {
	file, key := p, ""
	var t float64
	frame := false
	if _, err := os.Lstat(p); err != nil {
		var v string
		if v, t, frame = store.SplitFrame(p); frame {
			file = v // a video's frame, served from its video
		} else if file, key = splitSample(p); file == "" {
			return indexedFile{}, missing(snap, p, err)
		}
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return indexedFile{}, missing(snap, file, err)
	}
	ok, err := inRoots(snap, file, real)
	if err != nil {
		return indexedFile{}, fmt.Errorf("the indexed folders of the index: %w", err)
	}
	if !ok {
		return indexedFile{}, errOutside
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return indexedFile{}, missing(snap, file, err)
	case !fi.Mode().IsRegular() || fi.ModTime().UnixNano() != rec.MtimeNs || key == "" && fi.Size() != rec.Size:
		return indexedFile{}, errChanged
	}
	c := ctime.Of(fi)
	moved := key == "" && !frame && rec.CtimeNs != 0 && c != 0 && c != rec.CtimeNs
	return indexedFile{path: p, rec: rec, real: real, key: key, frame: frame, t: t, moved: moved}, nil
}

// checkContent reads f's indexed bytes through and checks them against
// the record's content hash (errChanged when they differ): one read, for
// a file whose stat no longer says it is unchanged (indexedFile.moved).
func checkContent(f indexedFile) error {
	file, _, err := openChecked(f)
	if err != nil {
		return err
	}
	return file.Close()
}

// splitSample splits a sample's path SHARD.tar#KEY at the first separator
// whose left side is a tar file (a folder or a key may hold the separator
// too). It returns "" when no prefix of p is one.
func splitSample(p string) (shard, key string) {
	for i := 0; i < len(p); i++ {
		if !strings.HasPrefix(p[i:], store.SampleSep) || !strings.HasSuffix(strings.ToLower(p[:i]), ".tar") {
			continue
		}
		if fi, err := os.Stat(p[:i]); err == nil && fi.Mode().IsRegular() {
			return p[:i], p[i+len(store.SampleSep):]
		}
	}
	return "", ""
}

// inRoots reports whether the file (or shard) at p, real once its links
// are resolved, may be served: real is p itself (no link on the way, so it
// is the very path indexed), or real lies inside one of the folders or
// tar shards ever indexed into the index by any build or merge
// (snap.Roots), each resolved too, or inside the resolved path of a
// folder between such a root and p (a folder link the build followed).
// A link that leads out of all of them is refused, even to a file with
// the indexed content.
func inRoots(snap *store.Snapshot, p, real string) (bool, error) {
	if real == p {
		return true, nil
	}
	roots, err := snap.Roots()
	if err != nil {
		return false, err
	}
	for _, root := range roots {
		if r, err := filepath.EvalSymlinks(root); err == nil && store.Under(real, r) {
			return true, nil
		}
	}
	// A folder link inside a root, which the build followed, leads where
	// it leads: real may lie under the resolved path of any folder on the
	// way from a root down to p.
	for d := filepath.Dir(p); slices.ContainsFunc(roots, func(r string) bool { return store.Under(d, r) }); d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil && store.Under(real, r) {
			return true, nil
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return false, nil
}

// openChecked opens the indexed bytes of f for streaming, once a first
// pass over them has matched the record's content hash: a file is never
// held in memory, and what is served is what was indexed (an edit that
// kept the size and modification time is refused). The caller closes the
// file.
func openChecked(f indexedFile) (*os.File, source, error) {
	file, srcs, err := openSources(f)
	if err != nil {
		return nil, source{}, err
	}
	for _, src := range srcs {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(src.sec, 0, src.sec.Size())); err == nil && store.Hash(h.Sum(nil)) == f.rec.Hash {
			return file, src, nil
		}
	}
	file.Close()
	return nil, source{}, errChanged
}

// readChecked reads the indexed bytes of f into memory, at most limit
// bytes, and checks them against the record's content hash. It returns
// them with the name the decoder should see.
func readChecked(f indexedFile, limit int64) ([]byte, string, error) {
	if f.rec.Size > limit {
		return nil, "", fmt.Errorf("%w: %s is %d MiB, thumbnails are made of files up to %d MiB", preprocess.ErrTooLarge, f.path, f.rec.Size>>20, limit>>20)
	}
	file, srcs, err := openSources(f)
	if err != nil {
		return nil, "", err
	}
	defer file.Close()
	data := make([]byte, f.rec.Size)
	for _, src := range srcs {
		if _, err := src.sec.ReadAt(data, 0); err == nil && store.Hash(sha256.Sum256(data)) == f.rec.Hash {
			return data, src.name, nil
		}
	}
	return nil, "", errChanged
}

// source is where the indexed bytes of a record may be: a whole file, or
// a member of a tar shard.
type source struct {
	name string // the file's path or the member's name (decoder, content type)
	sec  *io.SectionReader
}

// openSources opens the file of f (its shard for a sample) and returns
// where its indexed bytes may be: the file's first rec.Size bytes, or
// each member of the sample's key with the recorded size (the image
// member, unless another has the same size). The caller checks the hash
// and closes the file.
func openSources(f indexedFile) (*os.File, []source, error) {
	// Looked at before the open, which would wait for a named pipe's
	// writer put in the file's place.
	if fi, err := os.Stat(f.real); err != nil {
		return nil, nil, missing(nil, f.real, err)
	} else if !fi.Mode().IsRegular() {
		return nil, nil, errChanged
	}
	file, err := os.Open(f.real)
	if err != nil {
		return nil, nil, missing(nil, f.real, err)
	}
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() || f.key == "" && fi.Size() != f.rec.Size {
		file.Close()
		return nil, nil, errChanged
	}
	if f.key == "" {
		return file, []source{{f.path, io.NewSectionReader(file, 0, f.rec.Size)}}, nil
	}
	srcs, err := sampleMembers(file, f.key, f.rec.Size)
	if err != nil || len(srcs) == 0 {
		file.Close()
		return nil, nil, errGone
	}
	return file, srcs, nil
}
