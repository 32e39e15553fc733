package watch

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/index"
)

// Which events are changes. A batch runs a build, and the build commits
// to the index: were the index's own events changes, or those of files
// no build reads (a catalog's journal written every few seconds, a
// download's temporary file), batches would follow one another for ever,
// the model never idle. So an event counts only when a build may index
// something different for it: a folder (a new one may hold photos), a
// file the build reads by its name, a path that was a watched folder or
// is waiting to settle (gone now), or a root.

// companions are the names the store gives the files it keeps beside the
// index (store: its build lock, its commit gate, a merge's copy and that
// copy's gate, a damaged or newer index moved aside); exact marks those
// that are the whole suffix, the others are followed by a number or a
// time.
var companions = []struct {
	suffix string
	exact  bool
}{
	{".lock", true}, {".gate", true}, {".merge-", false}, {".corrupt-", false}, {".newer-", false},
}

// indexFile reports whether p is the index file (Options.Index) or one
// the store keeps beside it: the same folder, reached by any path.
func (w *watcher) indexFile(p string) bool {
	if w.o.Index == "" {
		return false
	}
	base, name := filepath.Base(w.o.Index), filepath.Base(p)
	rest, ok := strings.CutPrefix(name, base)
	if !ok {
		return false
	}
	if rest != "" && !companionSuffix(rest) {
		return false
	}
	dir, idir := filepath.Dir(p), filepath.Dir(w.o.Index)
	if dir == idir {
		return true
	}
	a, err := os.Stat(dir)
	if err != nil {
		return false
	}
	b, err := os.Stat(idir)
	return err == nil && os.SameFile(a, b)
}

// companionSuffix reports whether rest, what follows the index's name in
// another's, is one the store gives.
func companionSuffix(rest string) bool {
	for _, c := range companions {
		if rest == c.suffix || !c.exact && strings.HasPrefix(rest, c.suffix) {
			return true
		}
	}
	return false
}

// counts reports whether an event on p (under root, not skipped) may
// change what a build indexes: dir when p is a folder now, exists when it
// is there at all. A file counts by its name, as the walk takes it
// (index.IsImageName, IsVideoName; a tar shard is read only as a root);
// a path that is gone counts by its name too, or when it was a watched
// folder or is already waiting to settle (a folder's name says nothing).
// A folder gone that never had a watch (beyond the limit, on a network
// filesystem) is left to the rescan, as its changes are.
func (w *watcher) counts(root, p string, dir, exists bool) bool {
	name := filepath.Base(p)
	switch {
	case dir, p == root, index.IsImageName(name), index.IsVideoName(name):
		return true
	case exists:
		return false
	}
	_, watched := w.watched[p]
	_, pending := w.pending[p]
	return watched || pending
}
