package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/clipidx/clipidx/store"
)

// An id is a keyed hash of an indexed path with a key drawn at start: it
// says nothing about the path, cannot be forged for a path outside the
// index, and is resolved only by looking it up among the index's files.
const idLen = 16 // base64url characters (96 bits)

// errGone is a request for an id that is not (or no longer) a servable
// indexed file: 404.
var errGone = errors.New("no such image in the index")

type idMap struct {
	key []byte

	mu    sync.Mutex
	stamp dbStamp           // the index file when paths was built
	paths map[string]string // id -> path
}

// dbStamp tells when the index file changed (a build committed).
type dbStamp struct {
	size  int64
	mtime time.Time
}

func (m *idMap) id(path string) string {
	h := hmac.New(sha256.New, m.key)
	io.WriteString(h, path)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:idLen]
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

// lookup returns the path of id, rebuilding the map from s when the index
// file changed since it was built.
func (m *idMap) lookup(db string, s *store.Snapshot, id string) (string, error) {
	if !validID(id) {
		return "", errGone
	}
	fi, err := os.Stat(db)
	if err != nil {
		return "", err
	}
	st := dbStamp{fi.Size(), fi.ModTime()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.paths == nil || st != m.stamp {
		paths := map[string]string{}
		err := s.Files("", func(p string, f store.File) error {
			if !f.Failed() {
				paths[m.id(p)] = p
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		m.paths, m.stamp = paths, st
	}
	p, ok := m.paths[id]
	if !ok {
		return "", errGone
	}
	return p, nil
}

// indexedFile is an indexed file checked for serving.
type indexedFile struct {
	path string
	rec  store.File
	real string // the path with symbolic links resolved
}

// resolve finds id's file and checks that it is still what was indexed
// (size and modification time as recorded) and that it lies inside the
// indexed folders once symbolic links are resolved.
func (s *Server) resolve(snap *store.Snapshot, id string) (indexedFile, error) {
	p, err := s.ids.lookup(s.o.DB, snap, id)
	if err != nil {
		return indexedFile{}, err
	}
	rec, ok, err := snap.File(p)
	if err != nil {
		return indexedFile{}, err
	}
	if !ok || rec.Failed() {
		return indexedFile{}, errGone
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return indexedFile{}, errGone // removed
	}
	if !s.inRoots(snap, p, real) {
		return indexedFile{}, errGone
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != rec.Size || fi.ModTime().UnixNano() != rec.MtimeNs {
		return indexedFile{}, errGone // changed since indexing
	}
	return indexedFile{path: p, rec: rec, real: real}, nil
}

// inRoots reports whether real (path p with links resolved) lies inside
// the folders of the last build (also resolved). Before any build finished
// the roots are unknown: only a path with no link in it is served.
func (s *Server) inRoots(snap *store.Snapshot, p, real string) bool {
	st, err := snap.Stats()
	if err != nil || st.LastBuild == nil || len(st.LastBuild.Roots) == 0 {
		return real == p
	}
	for _, root := range st.LastBuild.Roots {
		if r, err := filepath.EvalSymlinks(root); err == nil && store.Under(real, r) {
			return true
		}
	}
	return false
}

// readChecked reads f and checks its content hash against the record.
func readChecked(f indexedFile) ([]byte, error) {
	data, err := os.ReadFile(f.real)
	if err != nil {
		return nil, errGone
	}
	if store.Hash(sha256.Sum256(data)) != f.rec.Hash {
		return nil, errGone
	}
	return data, nil
}
