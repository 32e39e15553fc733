package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// Video frames (VIDEO#t=S records) are served from their video: the
// thumbnail and the viewer's picture from a still that Options.FrameStill
// makes (ffmpeg), the video itself by /video/ID with Range requests. A
// video is served when its size and mtime are those recorded; its bytes
// are not hashed at each request (a video may be gigabytes).

// videoTypes are the Content-Types of the video extensions build indexes.
var videoTypes = map[string]string{
	".mp4": "video/mp4", ".m4v": "video/x-m4v", ".mov": "video/quicktime", ".mkv": "video/x-matroska",
	".webm": "video/webm", ".avi": "video/x-msvideo", ".mts": "video/mp2t", ".m2ts": "video/mp2t",
	".3gp": "video/3gpp", ".wmv": "video/x-ms-wmv",
}

// still returns the picture of frame f, encoded, and a name for the
// decoder.
func (s *Server) still(ctx context.Context, f indexedFile) ([]byte, string, error) {
	if s.o.FrameStill == nil {
		return nil, "", errNoFFmpeg
	}
	b, err := s.o.FrameStill(ctx, f.real, f.t)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		// The video replaced or renamed while ffmpeg read it, or bytes it
		// cannot read: said without the path (an answer names none).
		fi, serr := os.Stat(f.real)
		switch {
		case serr != nil:
			return nil, "", errRemoved
		case fi.Size() != f.rec.Size || fi.ModTime().UnixNano() != f.rec.MtimeNs:
			return nil, "", errChanged
		}
		return nil, "", errNoStill
	}
	return b, f.path + ".png", nil
}

// errNoStill is a frame's picture that ffmpeg could not make from a video
// whose size and mtime are those recorded.
var errNoStill = errors.New("ffmpeg could not make the picture of this video frame (the video's bytes changed, keeping its size and time?); a build of its folder indexes it again")

// stillImage answers /image/ID for a frame with its picture.
func (s *Server) stillImage(w http.ResponseWriter, r *http.Request, f indexedFile) {
	select {
	case decodeSlots <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	b, _, err := s.still(r.Context(), f)
	<-decodeSlots
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", http.DetectContentType(b))
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// video streams the video of a frame's id, Range requests answered (206)
// by http.ServeContent, with the Content-Type of its extension.
func (s *Server) video(w http.ResponseWriter, r *http.Request, id string) {
	f, ok := s.fileOrNotModified(w, r, id, "v")
	if !ok {
		return
	}
	if !f.frame {
		fail(w, errGone)
		return
	}
	serveVideo(w, r, f)
}

// serveVideo streams the video file f (the whole file, its size as
// recorded) with the Content-Type of its extension, Range requests
// answered by http.ServeContent.
func serveVideo(w http.ResponseWriter, r *http.Request, f indexedFile) {
	ct, known := videoTypes[strings.ToLower(filepath.Ext(f.real))]
	if !known {
		fail(w, errGone)
		return
	}
	file, srcs, err := openSources(f)
	if err != nil {
		fail(w, err)
		return
	}
	defer file.Close()
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, "", time.Unix(0, f.rec.MtimeNs), srcs[0].sec)
}

// liveVideo streams the movie of the Live Photo whose still is id: a
// still indexed and servable, and beside it the movie the index recorded
// as its Live Photo's (index/live.go), served as /video serves a video
// (its size and mtime those recorded, inside the indexed folders, Range
// requests answered). A still without one that is a Motion Photo (an
// Android phone's JPEG or HEIC with a video appended:
// preprocess.FindMotionVideo) has its video served from its own bytes.
//
// A Live movie's record holds the movie's size, mtime and ctime but no
// hash of its bytes (its Hash is the stamp of its still's stat), so a
// movie whose ctime moved (bytes copied over it with its size and mtime
// kept) is refused as changed until a build records it again: nothing
// else can prove it the indexed one. A still whose ctime moved must prove
// its content unchanged (checkContent), as for /image: its bytes say
// which movie is its own, and hold a Motion Photo's video.
func (s *Server) liveVideo(w http.ResponseWriter, r *http.Request, id string) {
	var still, movie indexedFile
	err := s.viewID(func(snap *store.Snapshot) error {
		var err error
		if still, err = s.resolve(snap, id); err != nil {
			return err
		}
		if still.frame || still.key != "" {
			return errGone
		}
		p, err := snap.LiveMovie(still.path)
		if err != nil || p == "" {
			return err
		}
		rec, ok, err := snap.File(p)
		if err != nil {
			return err
		}
		if name, live := rec.LiveVideo(); !ok || !live || name != filepath.Base(still.path) {
			return errGone
		}
		if movie, err = servable(snap, p, rec); err == nil && movie.moved {
			return errChanged
		}
		return err
	})
	if err == nil && still.moved {
		err = checkContent(still)
	}
	if err != nil {
		fail(w, err)
		return
	}
	if movie.path == "" {
		s.motionVideo(w, r, still)
		return
	}
	tag := etag(movie.rec.Hash, "l"+strconv.FormatInt(movie.rec.Size, 36)+"-"+strconv.FormatInt(movie.rec.MtimeNs, 36))
	if !notModified(w, r, tag) {
		serveVideo(w, r, movie)
	}
}

// motionVideo serves the video a Motion Photo still carries, 404 when it
// carries none.
func (s *Server) motionVideo(w http.ResponseWriter, r *http.Request, still indexedFile) {
	if notModified(w, r, etag(still.rec.Hash, "m")) {
		return
	}
	file, srcs, err := openSources(still)
	if err != nil {
		fail(w, err)
		return
	}
	defer file.Close()
	v, ok := preprocess.FindMotionVideo(srcs[0].sec, still.rec.Size)
	if !ok {
		fail(w, errGone)
		return
	}
	ct := "video/mp4"
	if v.QuickTime {
		ct = "video/quicktime"
	}
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, "", time.Unix(0, still.rec.MtimeNs), io.NewSectionReader(srcs[0].sec, v.Off, v.Len))
}

// notModified sets the caching headers of a response whose content has
// the ETag tag, and answers 304 (true) to a client that holds it. The
// browser must ask each time (no-cache): an id names a path, and the file
// at a path can change (replaced, two names swapped, a root replaced),
// which a max-age kept showing the old picture for.
func notModified(w http.ResponseWriter, r *http.Request, tag string) bool {
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "private, no-cache")
	if noneMatch(r.Header.Values("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// noneMatch reports whether an If-None-Match header (one or more lists of
// entity tags, or "*") names tag, by the weak comparison RFC 9110 asks for
// there: a W/ prefix does not count.
func noneMatch(values []string, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == tag {
				return true
			}
		}
	}
	return false
}

// addLive gives each result that is a Live Photo's still the URL of its
// movie, and each Motion Photo (Result.Motion, from its metadata: run
// after addPhotoMeta) that of its video (Result.Live).
func (s *Server) addLive(res []Result) error {
	return s.view(func(snap *store.Snapshot) error {
		for i := range res {
			if res[i].Video != "" {
				continue
			}
			p, err := snap.LiveMovie(res[i].Path)
			if err != nil {
				return err
			}
			if p != "" || res[i].Motion {
				res[i].Live = "/live/" + res[i].ID
			}
		}
		return nil
	})
}
