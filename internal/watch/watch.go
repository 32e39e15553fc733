// Package watch keeps an index current: it watches the roots of a build
// for changes (fsnotify: inotify, FSEvents, kqueue, ReadDirectoryChangesW),
// gathers them until they settle, and hands the changed paths to the
// caller's build, the same index.Build that `clipidx build` runs, limited
// to those paths (index.Options.Within). A periodic full build (the
// rescan) catches what events miss: folders on network filesystems, where
// other machines' changes raise none, folders left without a watch when
// the system's limit is reached, and events lost when the queue overflows;
// before it, every folder that lacks a watch gets one. Only the events
// that may change what a build indexes count (changes.go).
//
// The package prints nothing: it tells its caller through Options.Notify.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/store"
)

// Defaults of Options.
const (
	DefaultRescan = 10 * time.Minute
	DefaultSettle = 2 * time.Second
	// DefaultMaxWait bounds how long settled changes wait for a quiet
	// moment while others keep arriving (a long copy).
	DefaultMaxWait = 30 * time.Second
	// retryAfter is the wait before a full build after a failed one.
	retryAfter = time.Minute
	// DefaultRootPoll is how often the roots themselves are looked at: a
	// disk mounted again, or a root renamed back, raises no event.
	DefaultRootPoll = 5 * time.Second
)

// Options configures Run. Roots and Build are required.
type Options struct {
	// Roots are the folders to keep current (absolute, clean).
	Roots []string
	// Build runs one build of the roots: the whole of them when within is
	// nil (the first build and each rescan), else only those paths (files
	// or folders under the roots, some of which may no longer exist). It
	// is called from one goroutine at a time; ctx is cancelled when Run
	// must stop, and Build then returns after its current commit.
	Build func(ctx context.Context, within []string) error
	// Rescan is the time between full builds; 0 = DefaultRescan, < 0 =
	// never (events only).
	Rescan time.Duration
	// Settle is how long a changed path's size and modification time must
	// stay the same, and no other event arrive, before it is built (a
	// file still being written waits); 0 = DefaultSettle.
	Settle time.Duration
	// MaxWait: settled paths are built after this long even while other
	// events keep arriving; 0 = DefaultMaxWait.
	MaxWait time.Duration
	// NoEvents turns events off: full builds every Rescan only.
	NoEvents bool
	// RootPoll is how often, with events on, each root is looked at
	// (whether it exists, and which folder on which device it is): a root
	// that comes back (its disk mounted again, the folder renamed back)
	// or changes disk raises no event in the folders watched, so the
	// watcher watches it again and builds it when it sees that; 0 =
	// DefaultRootPoll, < 0 = never (the rescan finds it).
	RootPoll time.Duration
	// Notify, when set, is told what the watcher does and meets.
	Notify func(Note)
	// Index is the index file the builds write (absolute), "" = none
	// under the roots: events on it and on the files the store keeps
	// beside it are not changes (each commit raises some, which would
	// start the next batch, for ever).
	Index string

	// Clock and Source replace real time and fsnotify (tests drive both);
	// Stat replaces os.Lstat for the settle check. nil = the real ones.
	Clock  Clock
	Source Source
	// FSType names the network filesystem a folder is on ("" = local, or
	// not known); nil = the system's (statfs on Linux).
	FSType func(dir string) string
	// Mounts lists the system's mounts, read with the roots (RootPoll): a
	// disk mounted or unmounted below a root raises no event in the
	// folders watched, so a mount that comes, goes or changes is built and
	// watched like a root that changed. nil = the system's
	// (/proc/self/mountinfo on Linux; none elsewhere, where the rescan
	// finds them).
	Mounts func() []Mount
}

// Mount is one entry of the system's mount table.
type Mount struct {
	Point  string // where it is mounted (absolute, real: no links)
	ID     string // what is mounted there: a new mount there has another
	FSType string // "ext4", "nfs4", "autofs", ...
}

// remoteOrAuto names the filesystem types whose mount points are not
// followed: looking at one whose server is gone can hang, and an automount
// would be kept from expiring (a disk woken every few seconds).
var remoteOrAuto = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true, "9p": true, "ceph": true,
	"afs": true, "autofs": true, "fuse.sshfs": true, "fuse.rclone": true, "fuse.s3fs": true, "davfs": true, "glusterfs": true,
}

// Note is something the watcher tells its caller. Kind is one of:
//
//	"watching"  watches are set: Count folders (Text names the mode)
//	"build"     a build starts: Count changed paths (0 = a full build)
//	"built"     it ended (Err set when it failed)
//	"network"   Path is on a network filesystem (Text: which): rescans only
//	"limit"     the system's watch limit is reached (said once; Text says
//	            how to raise it): the folders left unwatched are rescanned,
//	            and each rescan tries to watch them again
//	"overflow"  events were lost: a full build follows
//	"error"     a watch could not be set (said once a folder; each rescan
//	            tries again) or reported an error (Err)
type Note struct {
	Kind  string
	Path  string
	Count int
	Text  string
	Err   error
}

// Clock is the time the watcher runs on.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Source is a stream of filesystem events over the folders added to it
// (one folder each, not recursive: Run adds every folder under the roots).
type Source interface {
	Add(dir string) error
	Remove(dir string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// fsSource is a Source over fsnotify.
type fsSource struct{ w *fsnotify.Watcher }

func (s fsSource) Add(dir string) error          { return s.w.Add(dir) }
func (s fsSource) Remove(dir string) error       { return s.w.Remove(dir) }
func (s fsSource) Events() <-chan fsnotify.Event { return s.w.Events }
func (s fsSource) Errors() <-chan error          { return s.w.Errors }
func (s fsSource) Close() error                  { return s.w.Close() }

// NewSource returns a Source over the system's notifications.
func NewSource() (Source, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsSource{w}, nil
}

// pend is a changed path waiting to settle.
type pend struct {
	stat    stat      // as last seen
	changed time.Time // when stat or an event last changed
}

// stat is what the settle check compares.
type stat struct {
	exists  bool
	size    int64
	mtimeNs int64
}

func statOf(path string) stat {
	fi, err := os.Lstat(path)
	if err != nil {
		return stat{}
	}
	return stat{exists: true, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()}
}

// watcher is the state of one Run.
type watcher struct {
	o   Options
	src Source
	// watched holds each folder with a watch, and which folder it was
	// when the watch was set: a folder renamed over a watched one, or
	// made again under its name, is another one that needs its own.
	watched map[string]rootID
	pending map[string]*pend
	// lastEvent is the time of the last event that added or changed a
	// pending path; readySince when the oldest settled path settled.
	lastEvent, readySince time.Time
	full                  bool            // a full build is due
	nextFull              time.Time       // when the next one is due
	limited               bool            // the watch limit was reached: no more watches until the next rescan
	toldLimit             bool            // the "limit" note was given
	told                  map[string]bool // network folders named (they get no watch)
	failed                map[string]bool // folders whose watch failed, named once
	// roots holds each root as last looked at (RootPoll); nextPoll is
	// when they are looked at again (zero: never).
	roots    map[string]rootID
	nextPoll time.Time
	// polled brings a poll's findings from the goroutine that looked (a
	// root on a network filesystem that hangs must not stop the loop);
	// polling is set while one is out.
	polled  chan looked
	polling bool
	// mounts holds each mount point below a root, in the root's form of
	// the path, and what was mounted there when last read.
	mounts map[string]string
	// real is each root with its links resolved, as the mount table
	// names folders.
	real map[string]string
}

// looked is what one poll found: each root (in Options.Roots order) and
// each mount point below a root.
type looked struct {
	roots  []rootID
	mounts map[string]string
}

func (o *Options) defaults() error {
	if len(o.Roots) == 0 || o.Build == nil {
		return errors.New("watch: Options.Roots and Options.Build are required")
	}
	if o.Rescan == 0 {
		o.Rescan = DefaultRescan
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.RootPoll == 0 {
		o.RootPoll = DefaultRootPoll
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.FSType == nil {
		o.FSType = networkFS
	}
	if o.Mounts == nil {
		o.Mounts = mountPoints
	}
	if o.Index != "" {
		o.Index = filepath.Clean(o.Index)
	}
	if o.NoEvents && o.Rescan < 0 {
		return errors.New("watch: with events off, a rescan interval is needed")
	}
	return nil
}

func (w *watcher) note(n Note) {
	if w.o.Notify != nil {
		w.o.Notify(n)
	}
}

// Run sets the watches, runs a full build, then builds what changes until
// ctx is done; it returns nil then, after the build under way has
// committed its work. A failed build is told (Note "built" with Err) and
// followed by a full build a minute later; Run itself fails only when it
// cannot watch at all.
func Run(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	w := &watcher{o: o, watched: map[string]rootID{}, pending: map[string]*pend{}, told: map[string]bool{}, failed: map[string]bool{},
		roots: map[string]rootID{}, polled: make(chan looked, 1)}
	if !o.NoEvents {
		w.src = o.Source
		if w.src == nil {
			s, err := NewSource()
			if err != nil {
				return fmt.Errorf("watch: %w (run with --rescan only, events off)", err)
			}
			w.src = s
		}
		defer w.src.Close()
		w.real = map[string]string{}
		for _, r := range o.Roots {
			w.roots[r] = rootOf(r)
			w.watchTree(r)
			w.real[r] = r
			if rr, err := filepath.EvalSymlinks(r); err == nil {
				w.real[r] = rr
			}
		}
		w.mounts = w.lookMounts()
		if o.RootPoll > 0 {
			w.nextPoll = o.Clock.Now().Add(o.RootPoll)
		}
		mode := "events, and a full rescan every " + o.Rescan.String()
		if o.Rescan < 0 {
			mode = "events only"
		}
		w.note(Note{Kind: "watching", Count: len(w.watched), Text: mode})
	} else {
		w.note(Note{Kind: "watching", Text: "rescan only, every " + o.Rescan.String()})
	}
	w.full = true // the first build
	return w.loop(ctx)
}

// loop is the one goroutine that owns the watcher's state; builds run on
// another, one at a time.
func (w *watcher) loop(ctx context.Context) error {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.src != nil {
		events, errs = w.src.Events(), w.src.Errors()
	}
	var done chan error // the build under way, nil when none
	var tick <-chan time.Time
	var tickAt time.Time
	for {
		if done == nil {
			if within, full, ok := w.due(); ok {
				done = make(chan error, 1)
				w.note(Note{Kind: "build", Count: len(within)})
				go func(within []string) { done <- w.o.Build(ctx, within) }(within)
				if full {
					w.full = false
					w.schedule(w.o.Clock.Now())
				}
			}
		}
		// Sleep until the next settle check or rescan; an event that
		// brings the next check nearer re-arms the timer.
		if d := w.wait(); tick == nil || w.o.Clock.Now().Add(d).Before(tickAt) {
			tick, tickAt = w.o.Clock.After(d), w.o.Clock.Now().Add(d)
		}
		select {
		case <-ctx.Done():
			if done != nil {
				<-done // Build stops after its current commit
			}
			return nil
		case err := <-done:
			done = nil
			w.note(Note{Kind: "built", Err: err})
			if err != nil && ctx.Err() == nil {
				// Try everything again later (the model or the disk may
				// come back): a full build sees every change.
				w.full, w.nextFull = false, w.o.Clock.Now().Add(retryAfter)
			}
		case l := <-w.polled:
			w.polling = false
			w.rootsLooked(l)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.event(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.note(Note{Kind: "overflow", Text: "events were lost (the queue overflowed): rescanning everything"})
				w.full = true
				continue
			}
			w.note(Note{Kind: "error", Err: err})
		case <-tick:
			tick = nil
			w.settle()
			w.pollRoots()
		}
	}
}

// schedule sets the next full build Rescan after now (never when < 0).
func (w *watcher) schedule(now time.Time) {
	w.nextFull = time.Time{}
	if w.o.Rescan > 0 {
		w.nextFull = now.Add(w.o.Rescan)
	}
}

// due returns the build to start now, if any: a full one when asked for
// or when the rescan is due, else the settled paths once the events have
// been quiet for Settle (or waited MaxWait).
func (w *watcher) due() (within []string, full, ok bool) {
	now := w.o.Clock.Now()
	if w.full || !w.nextFull.IsZero() && !now.Before(w.nextFull) {
		w.takeReady() // the full build covers them
		w.rewatch()
		return nil, true, true
	}
	if w.readySince.IsZero() {
		return nil, false, false
	}
	if now.Sub(w.lastEvent) < w.o.Settle && now.Sub(w.readySince) < w.o.MaxWait {
		return nil, false, false
	}
	within = w.takeReady()
	return within, false, len(within) > 0
}

// takeReady removes the settled paths from pending and returns them,
// sorted.
func (w *watcher) takeReady() []string {
	now := w.o.Clock.Now()
	var out []string
	for p, pd := range w.pending {
		if now.Sub(pd.changed) >= w.o.Settle {
			out = append(out, p)
			delete(w.pending, p)
		}
	}
	w.readySince = time.Time{}
	sort.Strings(out)
	return out
}

// wait is how long the loop may sleep: until the next settle check while
// paths are pending, else until the next full build or root poll,
// whichever comes first.
func (w *watcher) wait() time.Duration {
	if len(w.pending) > 0 || w.full {
		return max(w.o.Settle/4, time.Millisecond)
	}
	now := w.o.Clock.Now()
	d := 24 * time.Hour
	if !w.nextFull.IsZero() {
		d = w.nextFull.Sub(now)
	}
	if !w.nextPoll.IsZero() {
		d = min(d, w.nextPoll.Sub(now))
	}
	return max(d, time.Millisecond)
}

// pollRoots looks at each root when RootPoll is due. One that changed
// since it was last looked at (it came back, went, or is another folder
// or on another device: a disk mounted on it or taken away) loses its
// old watches, gets new ones if it is there, and waits to settle like a
// changed path: its build is of the whole root, which finds it back, or
// keeps its entries offline.
//
// The roots are looked at on a goroutine of their own, one poll at a
// time, whose findings the loop takes (rootsLooked): a stat of a root on a
// network filesystem whose server is gone can hang for minutes, and the
// loop must meanwhile keep taking events and starting builds.
func (w *watcher) pollRoots() {
	now := w.o.Clock.Now()
	if w.nextPoll.IsZero() || now.Before(w.nextPoll) || w.polling {
		return
	}
	w.nextPoll = now.Add(w.o.RootPoll)
	w.polling = true
	roots := slices.Clone(w.o.Roots)
	go func() {
		l := looked{roots: make([]rootID, len(roots))}
		for i, r := range roots {
			l.roots[i] = lookRoot(r)
		}
		l.mounts = w.lookMounts()
		w.polled <- l
	}()
}

// lookMounts reads the mounts below each root (the roots themselves are
// looked at as roots), in the root's form of the path, except in folders
// a build skips and remote or automounted filesystems. It looks at no
// folder (the table says what is mounted), and reads only Options and
// real, set before the poll's goroutine starts.
func (w *watcher) lookMounts() map[string]string {
	out := map[string]string{}
	for _, m := range w.o.Mounts() {
		if remoteOrAuto[m.FSType] {
			continue
		}
		for _, r := range w.o.Roots {
			real := w.real[r]
			if m.Point == real || !store.Within(m.Point, real) {
				continue
			}
			p := r + m.Point[len(real):]
			if !index.Skips(r, p) {
				out[p] = m.ID
				break
			}
		}
	}
	return out
}

// lookRoot is rootOf, for pollRoots: a hook for the tests.
var lookRoot = rootOf

// rootsLooked takes a poll's findings (pollRoots). A mount point below a
// root that came, went or changed is, like a root that changed, watched
// again and built: a disk mounted there is indexed, one taken away is
// kept offline.
func (w *watcher) rootsLooked(l looked) {
	for i, r := range w.o.Roots {
		id := l.roots[i]
		if id == w.roots[r] {
			continue
		}
		w.roots[r] = id
		w.changedUnder(r, id)
	}
	for m, id := range l.mounts {
		if old, ok := w.mounts[m]; !ok || old != id {
			w.changedUnder(m, lookRoot(m))
		}
	}
	for m := range w.mounts {
		if _, ok := l.mounts[m]; !ok { // unmounted: the folder beneath shows
			w.changedUnder(m, lookRoot(m))
		}
	}
	w.mounts = l.mounts
}

// changedUnder drops the watches on dir, a root or mount point that is
// another folder than before (id), sets them again when it is a folder,
// and has it built once it settles.
func (w *watcher) changedUnder(dir string, id rootID) {
	now := w.o.Clock.Now()
	w.unwatch(dir)
	for d := range w.told {
		if store.Within(d, dir) {
			delete(w.told, d) // a network disk there may be gone: look again
		}
	}
	if id.dir {
		w.watchTree(dir)
	}
	w.lastEvent = now
	w.pending[dir] = &pend{stat: statOf(dir), changed: now}
}

// settle looks at every pending path again: one whose stat changed waits
// Settle more; the first one to settle starts the clock of MaxWait.
func (w *watcher) settle() {
	now := w.o.Clock.Now()
	for p, pd := range w.pending {
		if st := statOf(p); st != pd.stat {
			pd.stat, pd.changed = st, now
			w.lastEvent = now
			continue
		}
		if now.Sub(pd.changed) >= w.o.Settle && w.readySince.IsZero() {
			w.readySince = now
		}
	}
}

// event records one filesystem event: its path waits to settle; a new
// folder gets its watches (its files written before count: the folder is
// built whole); a folder gone loses them. An event that cannot change
// what a build indexes is passed by (see counts): it neither starts a
// batch nor delays one.
func (w *watcher) event(ev fsnotify.Event) {
	p := ev.Name
	root := w.rootOf(p)
	if root == "" || index.Skips(root, p) || w.indexFile(p) {
		return
	}
	fi, err := os.Stat(p)
	dir := err == nil && fi.IsDir()
	if !w.counts(root, p, dir, err == nil) {
		return
	}
	now := w.o.Clock.Now()
	w.lastEvent = now
	st := statOf(p)
	if pd, ok := w.pending[p]; ok {
		pd.stat, pd.changed = st, now
	} else {
		w.pending[p] = &pend{stat: st, changed: now}
	}
	if ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename) {
		if _, ok := w.watched[p]; ok { // a folder's watches are set from it down
			w.unwatch(p)
		}
		if _, ok := w.roots[p]; ok {
			w.roots[p] = rootID{} // gone: RootPoll sees it come back
		}
	}
	if dir {
		// A new folder, one renamed over a watched one (which raises
		// only its Create: the old folder's watch went with it), or one
		// that lacks its watch (it could not be read until this chmod):
		// watchTree watches what is not watched as the folder it is.
		w.watchTree(p)
	}
}

// rootOf returns the innermost root p lies within ("" when none): a
// hidden folder watched as a root of its own is looked at, though the
// root around it skips it.
func (w *watcher) rootOf(p string) string {
	in := ""
	for _, r := range w.o.Roots {
		if store.Within(p, r) && len(r) > len(in) {
			in = r
		}
	}
	return in
}

// rewatch, before each full build, sets the watches of every folder that
// lacks one: a root that went away with its disk and came back (no event
// says so, the rescan finds it), a folder whose watch the system dropped
// or could not set (one renamed over a watched one, one that could not be
// read then, those beyond the watch limit). A root that is another folder
// than the one watched (a disk mounted on it since) loses its old
// watches: they see the folder beneath.
func (w *watcher) rewatch() {
	if w.src == nil {
		return
	}
	w.limited = false // watches may have been freed, or the limit raised
	for _, r := range w.o.Roots {
		id := rootOf(r)
		if id != w.roots[r] {
			w.unwatch(r)
		}
		w.roots[r] = id
		if id.dir {
			w.watchTree(r)
		}
	}
}

// unwatch forgets the watches on dir and below (the system dropped them).
func (w *watcher) unwatch(dir string) {
	for d := range w.watched {
		if store.Within(d, dir) {
			delete(w.watched, d)
			w.src.Remove(d) // already gone with its folder: the error says so
		}
	}
}

// watchTree sets a watch on dir and every folder below it that a build
// walks and that has none (or one on another folder of that name),
// except on a network filesystem (told once a folder) and once the
// system's limit is reached (told once).
func (w *watcher) watchTree(dir string) {
	root := w.rootOf(dir)
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		if w.limited || w.told[d] || depth > 256 {
			return
		}
		id := rootOf(d)
		if !id.dir {
			return // gone before its watch (moved on at once): its going raised an event
		}
		if old, ok := w.watched[d]; !ok || old != id {
			if ok {
				w.unwatch(d) // another folder under this name: the old one's watches are gone
			}
			if !w.add(d, id) {
				return
			}
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return // a folder that cannot be read: the build says so
		}
		for _, e := range entries {
			p := d + string(os.PathSeparator) + e.Name()
			if !e.IsDir() || index.Skips(root, p) {
				continue
			}
			walk(p, depth+1)
		}
	}
	walk(dir, 0)
}

// add sets the watch of folder d (which is id), and reports whether it
// did.
func (w *watcher) add(d string, id rootID) bool {
	if kind := w.o.FSType(d); kind != "" {
		w.told[d] = true
		w.note(Note{Kind: "network", Path: d, Text: kind})
		return false
	}
	err := w.src.Add(d)
	switch {
	case err == nil:
		w.watched[d] = id
		delete(w.failed, d)
		return true
	case errors.Is(err, fs.ErrNotExist):
		// Gone before its watch (moved on at once): its going raised an event.
	case isLimit(err):
		w.limited = true
		if !w.toldLimit {
			w.toldLimit = true
			w.note(Note{Kind: "limit", Path: d, Err: err, Text: limitAdvice()})
		}
	case !w.failed[d]:
		w.failed[d] = true
		w.note(Note{Kind: "error", Path: d, Err: err})
	}
	return false
}
