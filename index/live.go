package index

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/clipidx/clipidx/internal/ctime"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// Live Photos. An iPhone (by default since 2015) writes beside each photo
// a movie of the seconds around it: IMG_1234.HEIC and IMG_1234.MOV, which
// carry the same content identifier (the still in its Apple MakerNote,
// the movie as com.apple.quicktime.content.identifier). The still is the
// moment and is indexed as any photo; the movie is left out: sampling it
// would cost a video's decode and model passes for each photo, and bring
// the same moment twice into every result. The rules:
//
//   - A movie is a Live Photo's when a photo in its folder has its name
//     but for the extension (.heic, .heif, .jpg, .jpeg, any case) and the
//     same content identifier. Both must say so: a clip beside a poster
//     image of its name is a video, and a movie or photo whose identifier
//     cannot be read is taken as it is (a video, a photo).
//   - The movie is recorded (store.KindLiveVideo, no vector, its still
//     named, the still's stat stamped), so that later builds pass it by on
//     its stat, as unchanged, without reading it. The movie changing, or
//     its still going or changing (one stat on each build, against the
//     stamp), sends it through the check again; a movie whose still is
//     gone, or says another identifier now, is indexed as a video, and
//     its record goes even when it cannot be (no ffmpeg, a build stopped
//     before its frames): it would say the still shows it.
//   - A video indexed before this rule (by an older clipidx, or before its
//     still was copied beside it) is checked on each build while a photo
//     of its name is beside it, and its frames give way to the record
//     once it proves to be a Live Photo's movie. A video that is not
//     keeps its frames; the check costs two header reads.
//   - The check needs no ffmpeg (the boxes are read in Go), so a Live
//     Photo's movie is never among the videos skipped for want of it.

// stillExts are the extensions a Live Photo's still has.
var stillExts = map[string]bool{".heic": true, ".heif": true, ".jpg": true, ".jpeg": true}

// liveStills finds the photos that may be a movie's still, listing each
// folder once per build (workers share it).
type liveStills struct {
	mu   sync.Mutex
	dirs map[string]map[string][]string // folder → lower-case stem → photo names
}

// candidates lists the photos beside the video at path with its name but
// for the extension (full paths).
func (l *liveStills) candidates(path string) []string {
	dir, name := filepath.Split(path)
	stem := strings.ToLower(strings.TrimSuffix(name, filepath.Ext(name)))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirs == nil {
		l.dirs = map[string]map[string][]string{}
	}
	stems, ok := l.dirs[dir]
	if !ok {
		stems = map[string][]string{}
		ents, _ := os.ReadDir(dir) // unreadable: no stills, the video is a video
		for _, e := range ents {
			n := e.Name()
			if ext := filepath.Ext(n); stillExts[strings.ToLower(ext)] && e.Type().IsRegular() {
				s := strings.ToLower(strings.TrimSuffix(n, ext))
				stems[s] = append(stems[s], n)
			}
		}
		l.dirs[dir] = stems
	}
	var out []string
	movieStem := strings.TrimSuffix(name, filepath.Ext(name))
	for _, n := range stems[stem] {
		if liveNames(movieStem, strings.TrimSuffix(n, filepath.Ext(n))) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// liveNames reports whether a movie of stem movie and a photo of stem
// still may be one Live Photo: the same name, or the photo's in lower or
// upper case (as store.Snapshot.LiveMovie finds a still's movie). Names
// that differ otherwise in case (Img_1.mov, IMG_1.HEIC) are not paired:
// the movie is a video.
func liveNames(movie, still string) bool {
	return movie == still || movie == strings.ToLower(still) || movie == strings.ToUpper(still)
}

// liveStill returns the file name of the photo whose Live Photo movie the
// video at path is, "" when it is none (or either file cannot be read),
// and the stamp of that photo's stat as it was read (stillStamp).
func (b *builder) liveStill(path string) (string, store.Hash) {
	stills := b.live.candidates(path)
	if len(stills) == 0 {
		return "", store.Hash{}
	}
	id := movieContentID(path)
	if id == "" {
		return "", store.Hash{}
	}
	for _, s := range stills {
		if sid, stamp := stillContentID(s); sid == id {
			return filepath.Base(s), stamp
		}
	}
	return "", store.Hash{}
}

// stillStamp is what a Live Photo movie's record keeps of its still, as
// the record's Hash (the movie's own content is never hashed): the
// still's size, mtime and ctime when the two were matched. A later build
// passes the movie by while its still's stat gives the same stamp. It is
// the still's stat, not the still's record in the index, that counts: that
// record may move on without the movie being looked at (a build stopped
// or killed between the two, a build without ffmpeg that reads the
// still but cannot sample the movie it no longer makes a Live Photo).
func stillStamp(fi os.FileInfo) store.Hash {
	var b [len("clipidx live still\x00") + 24]byte
	n := copy(b[:], "clipidx live still\x00")
	binary.LittleEndian.PutUint64(b[n:], uint64(fi.Size()))
	binary.LittleEndian.PutUint64(b[n+8:], uint64(fi.ModTime().UnixNano()))
	binary.LittleEndian.PutUint64(b[n+16:], uint64(ctime.Of(fi)))
	return sha256.Sum256(b[:])
}

// moviesBeside lists the videos in the folder of path, when path has a
// still's extension, whose names are its name but for the extension: a
// partial build of a photo (a watcher's event: changed, deleted) looks at
// them too, as the photo may make or unmake them a Live Photo's movie.
func moviesBeside(path string) []string {
	dir, name := filepath.Split(path)
	ext := filepath.Ext(name)
	if !stillExts[strings.ToLower(ext)] {
		return nil
	}
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		n := e.Name()
		if IsVideoName(n) && liveNames(strings.TrimSuffix(n, filepath.Ext(n)), strings.TrimSuffix(name, ext)) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// maxStillMeta bounds what is read of a still for its identifier (a HEIC's
// metadata is read from the whole file).
const maxStillMeta = 256 << 20

func movieContentID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	id, _ := video.ContentID(f, st.Size())
	return id
}

// stillContentID reads the content identifier of the photo at path, ""
// when it has none or cannot be read, with the stamp of its stat taken
// before the read.
func stillContentID(path string) (string, store.Hash) {
	f, err := os.Open(path)
	if err != nil {
		return "", store.Hash{}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", store.Hash{}
	}
	data, err := preprocess.MetaBytes(f, st.Size(), maxStillMeta)
	if err != nil {
		return "", store.Hash{}
	}
	return preprocess.ReadMeta(data).ContentID, stillStamp(st)
}

// isLive reports whether rec is the record of a Live Photo's movie.
func isLive(rec *store.File) bool {
	if rec == nil {
		return false
	}
	_, ok := rec.LiveVideo()
	return ok
}

// stillUnchanged reports whether the still a Live Photo movie's record
// (rec) names is beside it as it was when the two were matched (its
// stamp, stillStamp): not gone, and not rewritten (with another
// identifier, perhaps).
func stillUnchanged(video string, rec *store.File) bool {
	still, ok := rec.LiveVideo()
	if !ok {
		return false
	}
	fi, err := os.Stat(filepath.Join(filepath.Dir(video), still))
	return err == nil && fi.Mode().IsRegular() && stillStamp(fi) == rec.Hash
}

// recordLive records a video found to be a Live Photo's movie: the
// record that says so replaces its frames or failure.
func (b *builder) recordLive(r result) {
	f := store.File{Size: r.size, MtimeNs: r.mtimeNs, CtimeNs: r.ctimeNs, Hash: r.video.stamp,
		Kind: store.KindLiveVideo, Err: store.LiveVideoNote + r.video.live}
	b.batch.Put(r.path, f, nil)
	b.pending++
	for _, o := range r.video.old {
		b.batch.Delete(o.path)
		b.pending++
	}
	if r.old == nil {
		b.sum.LiveVideos++
	} else if old, ok := r.old.LiveVideo(); ok && old == r.video.live && r.old.Size == r.size && r.old.MtimeNs == r.mtimeNs {
		b.sum.Unchanged++ // its record again, with a ctime or its still's stamp that moved
	} else {
		b.sum.LiveVideos++
	}
}
