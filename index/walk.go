package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/clipidx/clipidx/internal/ctime"
	"github.com/clipidx/clipidx/store"
)

// maxDepth stops runaway recursion where loop detection is unavailable.
const maxDepth = 256

// found is one candidate image or video from the walk.
type found struct {
	path    string
	size    int64
	mtimeNs int64
	ctimeNs int64 // 0 when unknown (ctime.Of)
}

// walker collects image files under roots in a deterministic order: roots
// sorted, entries sorted by name, symlinked directories followed once each
// (by device and inode), so loops and duplicate mounts end.
type walker struct {
	ctx     context.Context
	visited map[fileID]string // each folder walked: the path it was walked by
	files   []found
	tars    []found // tar shard roots (webdataset), read by Build
	// old, when set, holds the records the build started with: a file
	// found is marked there (recWalked), and one unchanged (recSame) is
	// counted in same, not kept in files. seen holds the files found
	// that have no record (see saw).
	old      *oldRecords
	same     int
	seen     map[string]bool
	dangling []linkErr // links whose target is missing (reported by Build if they hold records)
	// away lists the folders, links and shards that looked away (could
	// not be read, a root or mount point that lists nothing, a mount point
	// whose disk is gone): their records are kept, offline.
	away     []awayDir
	onError  func(path string, err error)
	progress func(n int)

	roots    map[string]bool // the roots, however a folder is reached
	wasMount map[string]bool // folders earlier builds found to be mount points
	mounts   []string        // folders found to be mount points now
	// held reports whether the index holds records within a path (nil:
	// none); a former mount point that held none is walked as a folder.
	held func(path string) bool
	// isMount overrides mountPoint (tests stand in for a mount that way).
	isMount func(path string) bool
	// links are the links to folders found and not yet followed; aliases
	// the folders reached again by another path.
	links   []pendingLink
	aliases []alias
	// entryInfo overrides fs.DirEntry.Info for a file, canEnter the
	// check that a folder may be entered (tests).
	entryInfo func(path string, e fs.DirEntry) (fs.FileInfo, error)
	canEnter  func(dir string) bool
}

// enterable reports whether the folder dir may be entered: "dir/." is
// found only through it (search permission, x).
func (w *walker) enterable(dir string) bool {
	if w.canEnter != nil {
		return w.canEnter(dir)
	}
	_, err := os.Lstat(dir + string(filepath.Separator) + ".")
	return !errors.Is(err, fs.ErrPermission)
}

// pendingLink is a link to a folder, to follow after the real folders.
type pendingLink struct {
	path  string
	info  fs.FileInfo // the target's
	depth int
}

// followLinks walks the folders that links lead to, in the order they
// were found (links found in them included), once the roots' own folders
// are walked: a folder already visited by its real path is not walked
// again through a link.
func (w *walker) followLinks() error {
	for len(w.links) > 0 {
		l := w.links[0]
		w.links = w.links[1:]
		if err := w.dir(l.path, l.info, nil, l.depth); err != nil {
			return err
		}
	}
	// A folder away under one walked by another path is away by the
	// link's path too: records an earlier build made through the link
	// (its name first, or the real folder not walked then) are kept with
	// the folder's.
	for _, a := range w.aliases {
		for _, d := range slices.Clone(w.away) {
			if store.Within(d.path, a.real) && !w.awayWithin(a.link+d.path[len(a.real):]) {
				w.goAway(a.link+d.path[len(a.real):], d.reason)
			}
		}
	}
	return nil
}

// alias is a folder reached by a second path: a link to it (link), found
// after the walk went through it by real.
type alias struct{ link, real string }

// awayDir is a path whose records a build keeps because it looked away.
type awayDir struct {
	path, reason string
}

// newWalker returns a walker over roots (absolute, clean).
func newWalker(ctx context.Context, roots []string) *walker {
	w := &walker{ctx: ctx, visited: map[fileID]string{}, seen: map[string]bool{}, roots: map[string]bool{}}
	for _, r := range roots {
		w.roots[r] = true
	}
	return w
}

func (w *walker) walkRoot(root string) error {
	fi, err := os.Stat(root)
	if err != nil {
		if _, lerr := os.Lstat(root); lerr != nil && errors.Is(err, fs.ErrNotExist) {
			return err // no such root at all
		}
		// The root exists (a link to an unmounted disk, a folder behind
		// one we may not enter): keep what the index knows about it.
		w.unreachable(root, err)
		return nil
	}
	if !fi.IsDir() {
		switch {
		case (wanted(root) || IsShardName(root)) && !fi.Mode().IsRegular():
			// A named pipe would block the read, a device never end it.
			// Named when it was given; a walk passes it by silently.
			if w.roots[root] {
				w.fail(root, fmt.Errorf("%w (%s)", ErrNotRegular, fileType(fi.Mode())))
			}
		case wanted(root):
			w.add(root, fi)
		case IsShardName(root):
			w.tars = append(w.tars, found{path: root, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano(), ctimeNs: ctime.Of(fi)})
		case !w.roots[root]:
			// A path of a partial build (a watcher's changed file): not
			// one a build reads, and its records, if any, are gone.
		case w.held != nil && w.held(root):
			// The folder indexed here was replaced by a file (moved
			// aside, a mount point covered): not a deletion.
			w.unreachable(root, errors.New("a file, no longer a folder"))
		default:
			w.fail(root, ErrNotIndexable)
		}
		return nil
	}
	return w.dir(root, fi, nil, 0)
}

// ErrNotRegular is a root named as an image, a video or a shard that is
// not a regular file (a named pipe, a device): it is not read.
var ErrNotRegular = errors.New("not a regular file; not read")

// ErrNotIndexable is a root that is a file of no kind a build indexes.
var ErrNotIndexable = errors.New("not a folder, an image, a video or a tar shard")

// fileType names the type of a file that is not a regular one.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

func (w *walker) add(path string, fi fs.FileInfo) {
	w.take(w.old.find(path), path, "", "", fi)
}

// take adds the file fi, whose record is r (nil: none), found at path, or
// in folder as name when path is "" (joined only when kept). A file
// unchanged by its record (oldRecords.same) is only counted.
func (w *walker) take(r *oldRec, path, folder, name string, fi fs.FileInfo) {
	st := found{size: fi.Size(), mtimeNs: fi.ModTime().UnixNano(), ctimeNs: ctime.Of(fi)}
	if r != nil {
		if r.flags&recWalked != 0 {
			return
		}
		r.flags |= recWalked
		if w.old.same(r, st) {
			r.flags |= recSame
			w.same++
			w.tick()
			return
		}
	}
	if path == "" {
		path = filepath.Join(folder, name)
	}
	if r == nil {
		if w.seen[path] {
			return
		}
		w.seen[path] = true
	}
	st.path = path
	w.files = append(w.files, st)
	w.tick()
}

// tick reports the progress of the walk every 256 files.
func (w *walker) tick() {
	if n := w.found(); w.progress != nil && n%256 == 0 {
		w.progress(n)
	}
}

// found counts the files the walk found: those kept in files, and those
// unchanged (recSame).
func (w *walker) found() int { return len(w.files) + w.same }

// saw reports whether the walk found the file at path.
func (w *walker) saw(path string) bool {
	if r := w.old.find(path); r != nil {
		return r.flags&recWalked != 0
	}
	return w.seen[path]
}

// unsee takes path out of the files the walk found (another machine's
// share: selectShare), but not out of files.
func (w *walker) unsee(path string) {
	if r := w.old.find(path); r != nil {
		w.unseeRecord(r)
	} else {
		delete(w.seen, path)
	}
}

// unseeRecord takes the file of record r out of the files the walk found.
func (w *walker) unseeRecord(r *oldRec) {
	if r.flags&recSame != 0 {
		w.same--
	}
	r.flags &^= recWalked | recSame
}

// dir walks the folder path; parent is the folder that lists it (nil for
// a root or a followed link).
func (w *walker) dir(path string, fi, parent fs.FileInfo, depth int) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if id, ok := idOf(fi); ok {
		if first, ok := w.visited[id]; ok {
			if first != path {
				w.aliases = append(w.aliases, alias{path, first})
			}
			return nil
		}
		w.visited[id] = path
	}
	if depth > maxDepth {
		w.fail(path, fmt.Errorf("deeper than %d levels; not followed", maxDepth))
		return nil
	}
	mount := w.mountPoint(path, fi, parent)
	if mount {
		w.mounts = append(w.mounts, path)
	} else if w.wasMount[path] && w.held != nil && w.held(path) {
		// The disk is gone and the bare folder shows through: whatever
		// it lists is not what was indexed there.
		w.goAway(path, "no longer a mount point (its disk is gone?)")
		return nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		w.unreachable(path, err)
		if len(entries) == 0 {
			return nil
		}
	}
	if (mount || w.roots[path] || w.wasMount[path]) && listsNothing(entries) {
		// An unmounted share or an unplugged disk, not a deletion; a
		// plain subfolder that was emptied is a deletion.
		w.goAway(path, "lists nothing (a share not mounted, a disk unplugged?)")
		return nil
	}
	records := w.old.dirIndex(path) // the records of its files, if any
	for _, e := range entries {     // sorted by name
		name := e.Name()
		if skipName(name) {
			continue
		}
		switch {
		case e.IsDir():
			p := filepath.Join(path, name)
			info, err := e.Info()
			if err != nil {
				w.unreachable(p, err)
				continue
			}
			if err := w.dir(p, info, fi, depth+1); err != nil {
				return err
			}
		case e.Type()&fs.ModeSymlink != 0:
			p := filepath.Join(path, name)
			info, err := os.Stat(p) // follow
			if err != nil {
				// A dangling link looks the same as a link to an unmounted
				// disk: never forget what was indexed through it.
				w.dangling = append(w.dangling, linkErr{p, err})
				w.goAway(p, fmt.Sprintf("its link leads nowhere (%v)", err))
				continue
			}
			if info.IsDir() {
				// Followed once every root has been walked by its real
				// folders (followLinks): a folder reached both ways is
				// then indexed by its own path, whatever the names.
				w.links = append(w.links, pendingLink{p, info, depth + 1})
			} else if info.Mode().IsRegular() && wanted(name) {
				w.add(p, info)
			}
		case e.Type().IsRegular() && wanted(name):
			var info fs.FileInfo
			if w.entryInfo != nil {
				info, err = w.entryInfo(filepath.Join(path, name), e)
			} else {
				info, err = e.Info()
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted during the walk
			}
			if errors.Is(err, fs.ErrPermission) && !w.enterable(path) {
				// A folder that lists its names but may not be entered
				// (r without x): none of its files can be looked at, and
				// none is gone. Keep them all, named once.
				w.unreachable(path, err)
				return nil
			}
			if err != nil {
				// Not looked at (a file an ACL hides), not gone: keep its
				// record, and walk on.
				w.unreachable(filepath.Join(path, name), err)
				continue
			}
			// The path is made only for a file kept (walker.take).
			w.take(w.old.lookup(records, name), "", path, name, info)
		}
	}
	return nil
}

// linkErr is a symbolic link whose target could not be reached.
type linkErr struct {
	path string
	err  error
}

// ErrLinkNowhere is reported (through Options.OnError) for a symbolic
// link, never indexed, whose target cannot be reached: nothing is indexed
// through it, and each build says so until the target is there.
var ErrLinkNowhere = errors.New("nothing is indexed through it until its target is there")

// nowhere is l's error for a link that never held records: where the
// link leads and why that cannot be reached.
func nowhere(l linkErr) error {
	cause := l.err
	var pe *fs.PathError
	if errors.As(cause, &pe) {
		cause = pe.Err
	}
	target, err := os.Readlink(l.path)
	if err != nil {
		return fmt.Errorf("its link leads nowhere (%v); %w", cause, ErrLinkNowhere)
	}
	return fmt.Errorf("its link leads to %s, which cannot be reached (%v); %w", target, cause, ErrLinkNowhere)
}

// mayHoldPhotos reports whether a link at path may lead to what a build
// indexes, by its name: one without an extension (a folder), an image, a
// video or a tar shard.
func mayHoldPhotos(path string) bool {
	name := filepath.Base(path)
	return filepath.Ext(name) == "" || wanted(name) || IsShardName(name)
}

// ErrUnreachable is reported (through Options.OnError) for a folder or
// link that could not be read: the index keeps its entries, since a
// missing disk is not a deletion.
var ErrUnreachable = errors.New("unreachable; its entries are kept: `clipidx forget` drops them")

// unreachable marks path as not readable: its records are kept.
func (w *walker) unreachable(path string, err error) {
	w.goAway(path, fmt.Sprintf("cannot be read (%v)", err))
	w.fail(path, fmt.Errorf("%w (%v)", ErrUnreachable, err))
}

// goAway marks path as away: its records are kept, offline.
func (w *walker) goAway(path, reason string) {
	w.away = append(w.away, awayDir{path, reason})
}

// listsNothing reports whether a listing holds nothing the walk would
// look at (clutter such as .DS_Store aside).
func listsNothing(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if !skipName(e.Name()) {
			return false
		}
	}
	return true
}

// mountPoint reports whether the folder path (fi) is a mount point: on
// another device than the folder that holds it. parent is that folder's
// information when the walk has it; otherwise path/.. is asked, which
// follows a link to its target's parent.
func (w *walker) mountPoint(path string, fi, parent fs.FileInfo) bool {
	if w.isMount != nil {
		return w.isMount(path)
	}
	dev, ok := devOf(fi)
	if !ok {
		return false
	}
	if parent == nil {
		var err error
		if parent, err = os.Stat(path + string(filepath.Separator) + ".."); err != nil {
			return false
		}
	}
	pdev, ok := devOf(parent)
	return ok && pdev != dev
}

func (w *walker) fail(path string, err error) {
	if w.onError != nil {
		w.onError(path, err)
	}
}

// Walk lists the image and video files under roots (absolute, cleaned paths) in the
// order a build processes them. It is exported for tools and tests; Build
// uses the same walk.
func Walk(ctx context.Context, roots []string) ([]string, error) {
	abs, err := absRoots(roots)
	if err != nil {
		return nil, err
	}
	w := newWalker(ctx, abs)
	for _, r := range abs {
		if err := w.walkRoot(r); err != nil {
			return nil, err
		}
	}
	if err := w.followLinks(); err != nil {
		return nil, err
	}
	out := make([]string, len(w.files))
	for i, f := range w.files {
		out[i] = f.path
	}
	return out, nil
}

// absRoots makes roots absolute and clean, sorted and without duplicates.
func absRoots(roots []string) ([]string, error) {
	if len(roots) == 0 {
		return nil, errors.New("no folder to index")
	}
	var out []string
	for _, r := range roots {
		a, err := filepath.Abs(r)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	sort.Strings(out)
	uniq := out[:0]
	for i, r := range out {
		if i == 0 || r != out[i-1] {
			uniq = append(uniq, r)
		}
	}
	return uniq, nil
}
