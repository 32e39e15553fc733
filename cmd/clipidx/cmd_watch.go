package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/watch"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newWatchCmd) }

// watchFlags are the flags watch and serve --watch share.
type watchFlags struct {
	rescan, settle, idleUnload time.Duration
	noEvents, exif, asJSON     bool
	batch, workers             int
	video                      videoFlags // as build's: videos are indexed the same way
}

func (f *watchFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.DurationVar(&f.rescan, "rescan", watch.DefaultRescan, "time between full rescans, which catch what events miss (network filesystems, folders beyond the watch limit, lost events); 0 = never")
	fl.DurationVar(&f.settle, "settle", watch.DefaultSettle, "a changed file is indexed once its size and time have not changed for this long (a copy in progress waits)")
	fl.DurationVar(&f.idleUnload, "idle-unload", 10*time.Minute, "release the model after this long without work; it loads again when files change (0 = keep it)")
	fl.BoolVar(&f.noEvents, "no-events", false, "do not watch for events: rescan only, every --rescan")
	f.video.registerSampling(fl)
}

func (f *watchFlags) check() error {
	if f.rescan < 0 || f.settle < 0 || f.idleUnload < 0 {
		return usageError("--rescan, --settle and --idle-unload take a duration ≥ 0")
	}
	if f.noEvents && f.rescan == 0 {
		return usageError("--no-events needs a --rescan interval")
	}
	return nil
}

func newWatchCmd() *cobra.Command {
	var wf watchFlags
	c := &cobra.Command{
		Use:   "watch [DIR...]",
		Short: "Keep the index current: build, then index changes as they happen",
		Long: `Build the folders (every folder indexed so far without DIR, as build does),
then watch them and index what changes: new, changed, renamed and deleted
photos and folders. Changes are gathered until they settle (a burst of copies
is one or a few batches; a file still being copied waits until its size and
time stop changing) and run through the same build as clipidx build, limited
to the changed paths: the same reuse, offline, failure and commit rules.

A full rescan every --rescan (10m by default; a no-change rescan reads no
file) catches what events miss: folders on network filesystems (NFS, SMB,
FUSE: changes made by other machines raise no event; they are rescanned
only), folders left without a watch when the system's limit is reached (said
once, with how to raise it), events lost when the queue overflows (a rescan
follows at once). A folder whose disk goes away is kept offline, as build
does; each root is looked at every 5s, and one that comes back (its disk
mounted again, the folder renamed back) is watched and built again then.

One build runs on an index at a time: a clipidx build started meanwhile waits
for the watcher's batch, and the watcher for it; neither embeds a file twice.
Ctrl-C or SIGTERM stops after the current commit. status (and the page of
clipidx serve) shows a running batch's progress. The model loads when there
is work and is released after --idle-unload without any.`,
		Example: `  clipidx watch ~/Pictures
  clipidx watch --rescan 1h --idle-unload 5m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			if wf.batch < 0 || wf.workers < 0 {
				return usageError("--batch and --workers take a count ≥ 0 (0 = automatic)")
			}
			roots, err := watchRoots(args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("exif") {
				wf.exif = indexEXIF(wf.exif)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runWatch(ctx, roots, wf, "clipidx watch", cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	wf.register(c)
	f := c.Flags()
	f.BoolVar(&wf.asJSON, "json", false, `print one JSON object a build: {"time","changed","added","updated","unchanged","reused","removed","failed","failures","offline","interrupted","error"} ("changed": paths looked at, 0 = a full build; "interrupted": true on a build stopped before its end, "error" on one that failed)`)
	f.BoolVar(&wf.exif, "exif", true, "turn photos upright by their EXIF orientation (as the index was built)")
	f.StringVar(&wf.video.ffmpeg, "ffmpeg", envOr("CLIPIDX_FFMPEG", ""), "folder holding ffprobe and ffmpeg, for videos (default: found on PATH) [env CLIPIDX_FFMPEG]")
	f.IntVar(&wf.batch, "batch", 0, "images per model pass (0 = what the device prefers)")
	f.IntVar(&wf.workers, "workers", 0, "goroutines reading and decoding images ahead of the model (0 = one per core)")
	return c
}

// watchRoots is the folders to watch: args (absolute), else every folder
// indexed so far. A folder that does not exist and holds no entries is an
// error, as for build.
func watchRoots(args []string, errw io.Writer) ([]string, error) {
	if len(args) == 0 {
		var err error
		if args, err = indexedRoots(); err != nil {
			return nil, err
		}
	}
	present, missing := splitMissing(args, errw)
	if len(missing) > 0 {
		return nil, missingError(missing)
	}
	var abs []string
	for _, a := range present {
		p, err := filepath.Abs(a)
		if err != nil {
			return nil, err
		}
		abs = append(abs, p)
	}
	return abs, nil
}

// idleModel is the watcher's model: opened when a build needs it, its
// towers loaded when a build has something to embed (ready) and released
// after idle without one (the face stays: its next Load brings them
// back). A build that embeds nothing (a rescan that finds no change, a
// batch of files already indexed) neither loads them nor keeps them.
type idleModel struct {
	idle time.Duration

	mu    sync.Mutex
	m     *clipnpu.Model
	busy  bool // a build has the towers loaded for its work
	timer *time.Timer
}

// acquire returns the model for one build (its face opened on first use);
// the towers are not loaded until the build calls ready.
func (im *idleModel) acquire() (*clipnpu.Model, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.m == nil {
		m, err := openFace(clipnpu.ImageTower, true)
		if err != nil {
			return nil, err
		}
		im.m = m
	}
	return im.m, nil
}

// ready is the build's index.Options.Ready: there is work, so the towers
// load (if they are not loaded) and stay until the build releases them.
func (im *idleModel) ready() error {
	im.mu.Lock()
	if im.timer != nil {
		im.timer.Stop()
	}
	im.busy = true
	m := im.m
	im.mu.Unlock()
	return m.Load(clipnpu.ImageTower)
}

// release ends a build: when it loaded the towers, they go after idle
// unless another build has work for them; one that did not leaves the
// idle time running.
func (im *idleModel) release() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if !im.busy {
		return
	}
	im.busy = false
	if im.idle <= 0 || im.m == nil {
		return
	}
	im.timer = time.AfterFunc(im.idle, func() {
		im.mu.Lock()
		defer im.mu.Unlock()
		if !im.busy && im.m != nil {
			im.m.Close()
		}
	})
}

func (im *idleModel) close() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.timer != nil {
		im.timer.Stop()
	}
	if im.m != nil {
		im.m.Close()
	}
}

// watchLine is one build of the watcher, for --json: failures and
// offline are [] when there are none; interrupted marks a build stopped
// before its end (Ctrl-C, SIGTERM; one stopped while it waited for
// another build did nothing), error one that failed.
type watchLine struct {
	Time    string `json:"time"`
	Changed int    `json:"changed"`
	index.Summary
	Interrupted bool   `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"`
}

// newWatchLine is the line of a build of within (nil: everything) that
// returned sum and err.
func newWatchLine(within []string, sum *index.Summary, err error) watchLine {
	line := watchLine{Time: time.Now().UTC().Format(time.RFC3339), Changed: len(within)}
	if sum != nil {
		line.Summary = *sum
	}
	if line.Failures == nil {
		line.Failures = []index.Failure{}
	}
	if line.Offline == nil {
		line.Offline = []store.Offline{}
	}
	if errors.Is(err, context.Canceled) {
		line.Interrupted = true
	} else if err != nil {
		line.Error = err.Error()
	}
	return line
}

// offlineTold is the set of offline folders the watcher last told of.
type offlineTold map[string]bool

// update takes what a build of within (nil: everything) found offline,
// and reports whether that changed the set: a folder that went offline,
// or one looked at again that is no longer offline.
func (t offlineTold) update(within []string, found []store.Offline) bool {
	now := map[string]bool{}
	for _, o := range found {
		now[o.Dir] = true
	}
	changed := false
	for d := range t {
		if !now[d] && (within == nil || slices.ContainsFunc(within, func(p string) bool { return store.Within(d, p) })) {
			delete(t, d)
			changed = true
		}
	}
	for d := range now {
		if !t[d] {
			t[d] = true
			changed = true
		}
	}
	return changed
}

// watchReport says what the watcher does: its builds on out (a line a
// build that changed something, or --json: an object a build), its notes
// on errw. Its methods are called from the watcher and its builds.
type watchReport struct {
	mu        sync.Mutex
	out, errw io.Writer
	asJSON    bool
	rescan    time.Duration // --rescan (0 = never)
	roots     []string
	offline   offlineTold
	// toldVideos: the note on videos skipped for want of ffmpeg, said once.
	toldVideos bool
}

func (r *watchReport) say(w io.Writer, format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(w, time.Now().Format("15:04:05 ")+format+"\n", a...)
}

// note says what the watcher told.
func (r *watchReport) note(n watch.Note) {
	never := "" // the folders the rescan covers are not covered with --rescan 0
	if r.rescan == 0 {
		never = " (set --rescan, e.g. --rescan 10m, to cover them)"
	}
	switch n.Kind {
	case "watching":
		if n.Count > 0 {
			r.say(r.errw, "watching %d %s under %v (%s)", n.Count, plural(n.Count, "folder", "folders"), r.roots, n.Text)
		} else {
			r.say(r.errw, "watching %v (%s)", r.roots, n.Text)
		}
	case "network":
		if r.rescan == 0 {
			r.say(r.errw, "%s is on %s: changes made by other machines raise no events there, and it is never rescanned with --rescan 0: they are missed%s", n.Path, n.Text, never)
		} else {
			r.say(r.errw, "%s is on %s: changes made by other machines raise no events there, so it is rescanned only (every %v)", n.Path, n.Text, r.rescan)
		}
	case "limit":
		if r.rescan == 0 {
			r.say(r.errw, "%s: the folders left without a watch are never rescanned with --rescan 0, and their changes are missed%s", n.Text, never)
		} else {
			r.say(r.errw, "%s: the folders left without a watch are rescanned only (every %v)", n.Text, r.rescan)
		}
	case "overflow":
		r.say(r.errw, "%s", n.Text)
	case "error":
		r.say(r.errw, "watch %s: %v", n.Path, n.Err)
	}
}

// built says what a build of within (nil: everything) did, in took.
func (r *watchReport) built(within []string, sum *index.Summary, err error, took time.Duration) {
	line := newWatchLine(within, sum, err)
	// The offline folders are told when they change, not again at each
	// rescan while a disk stays away.
	offChanged := sum != nil && r.offline.update(within, sum.Offline)
	if r.asJSON {
		r.mu.Lock()
		json.NewEncoder(r.out).Encode(line)
		r.mu.Unlock()
		return
	}
	if sum != nil && (sum.Added+sum.Updated+sum.Reused+sum.Removed+sum.Failed > 0 || offChanged) {
		what := "rescan"
		if len(within) > 0 {
			what = fmt.Sprintf("%d changed %s", len(within), plural(len(within), "path", "paths"))
		}
		stopped := ""
		if line.Interrupted {
			stopped = ", interrupted"
		}
		r.say(r.out, "%s: added %d, updated %d, unchanged %d, reused %d, removed %d, failed %d%s (%.1f s)", what,
			sum.Added, sum.Updated, sum.Unchanged, sum.Reused, sum.Removed, sum.Failed, stopped, took.Seconds())
		if sum.Unsaved > 0 {
			r.say(r.out, "not saved: %s of these (the save failed); the next build redoes them", unsavedText(sum.Unsaved))
		}
		for _, f := range sum.Failures {
			r.say(r.errw, "failed: %s", shown(namedError(f.Path, f.Error)))
		}
		if offChanged {
			for _, off := range sum.Offline {
				r.say(r.errw, "offline: %s, %d %s kept", off.Dir, off.Entries, plural(off.Entries, "entry", "entries"))
			}
		}
	}
	if sum != nil && sum.VideosSkipped > 0 && !r.toldVideos {
		r.toldVideos = true
		r.mu.Lock()
		printVideoNotes(r.errw, &index.Summary{VideosSkipped: sum.VideosSkipped})
		r.mu.Unlock()
	}
	if line.Error != "" {
		r.say(r.errw, "build failed (a full rescan follows in a minute): %s", line.Error)
	}
}

// runWatch keeps the index current over roots until ctx is done (nil
// then), saying what it does on out (builds) and errw (notes).
func runWatch(ctx context.Context, roots []string, wf watchFlags, command string, out, errw io.Writer) error {
	im := &idleModel{idle: wf.idleUnload}
	defer im.close()
	rep := &watchReport{out: out, errw: errw, asJSON: wf.asJSON, rescan: wf.rescan, roots: roots, offline: offlineTold{}}
	say := rep.say
	// built is set once a build registered the roots in the index; then
	// forgotten holds the roots the index no longer has (told once).
	var built bool
	forgotten := map[string]bool{}
	rescan := wf.rescan
	if rescan == 0 {
		rescan = -1
	}
	dbPath, err := filepath.Abs(g.db)
	if err != nil {
		return err
	}
	o := watch.Options{
		Roots:    roots,
		Rescan:   rescan,
		Settle:   wf.settle,
		NoEvents: wf.noEvents,
		Index:    dbPath, // a batch's commit is no change to build
		Notify:   rep.note,
		Build: func(ctx context.Context, within []string) error {
			start := time.Now()
			live := roots
			if built {
				// What the index holds now decides: a root forgotten
				// beside the watcher stays forgotten (once every batch put
				// it back, and a root forgotten because it was gone failed
				// every rescan); an index removed is built again whole.
				var gone []string
				var missing bool
				live, gone, missing = stillIndexed(g.db, roots)
				for _, r := range gone {
					if !forgotten[r] {
						forgotten[r] = true
						say(errw, "%s is no longer in the index (forgotten, or the index was replaced): not built again; give it to clipidx build or watch to index it again", shown(r))
					}
				}
				if missing {
					say(errw, "the index is gone: building it again")
					live, within = nil, nil
					for _, r := range roots {
						if !forgotten[r] {
							live = append(live, r)
						}
					}
				}
				if len(live) == 0 {
					return nil
				}
				if within != nil {
					within = withinRoots(within, live)
					if len(within) == 0 {
						return nil
					}
				}
			}
			sum, err := watchBuild(ctx, im, live, within, wf, command, func(e error) {
				say(errw, "waiting: %v", e)
			})
			if err == nil {
				built = true // the roots are the index's from now on
			}
			rep.built(within, sum, err, time.Since(start))
			// A build's maps (one record a file) are garbage now: give
			// their memory back before a long idle, not minutes later.
			debug.FreeOSMemory()
			return err
		},
	}
	err = watch.Run(ctx, o)
	if ctx.Err() != nil {
		say(errw, "stopped: finished work is saved")
	}
	return err
}

// watchBuild runs one build of the watcher: the same index.Build as
// clipidx build, limited to within (nil: everything), waiting for another
// build that holds the index.
func watchBuild(ctx context.Context, im *idleModel, roots, within []string, wf watchFlags, command string, wait func(error)) (*index.Summary, error) {
	m, err := im.acquire()
	if err != nil {
		return nil, err
	}
	defer im.release()
	proc, err := m.Processor(wf.exif)
	if err != nil {
		return nil, err
	}
	info := m.Info()
	batch := wf.batch
	if batch <= 0 {
		batch = info.ImageBatch
	}
	sampler, framePre, err := wf.video.sampler(proc)
	if err != nil {
		return nil, err
	}
	return index.Build(ctx, g.db, roots, index.Options{
		Video:           sampler,
		PreprocessFrame: framePre,
		Encoder:         m,
		Ready:           im.ready,
		Preprocess:      proc.Bytes,
		Reach:           preprocess.Formats(), // what proc.Bytes decodes
		Identity:        indexIdentity(m.Describe(wf.exif)),
		BatchSize:       batch,
		Workers:         wf.workers,
		PixelsPerImage:  3 * info.ImageSize * info.ImageSize,
		Device:          info.Device,
		DeviceNote:      info.DeviceNote,
		DeviceAtEnd:     deviceNow(m),
		Weights:         info.Rounded,
		Precision:       g.precision,
		Within:          within,
		LockWait:        wait,
		Command:         command,
	})
}

// buildLockWait is build's index.Options.LockWait: say once who holds the
// index and wait (nil with --no-wait: fail, naming the holder).
func buildLockWait(noWait bool, errw io.Writer) func(error) {
	if noWait {
		return nil
	}
	return func(err error) {
		fmt.Fprintf(errw, "waiting: %v (Ctrl-C to stop; --no-wait fails at once)\n", err)
	}
}

// serveWatch starts, when on, the watcher of serve --watch over every
// folder indexed so far; the function it returns stops it (after its
// current commit) and waits for it.
func serveWatch(ctx context.Context, on bool, wf watchFlags, cmd *cobra.Command) (func(), error) {
	if !on {
		return func() {}, nil
	}
	if err := wf.check(); err != nil {
		return nil, err
	}
	roots, err := watchRoots(nil, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	wf.exif = indexEXIF(wf.exif)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runWatch(wctx, roots, wf, "clipidx serve --watch", cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "clipidx: watch: %v\n", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// indexEXIF is the EXIF setting the index was built with (def when there
// is no index yet): the watcher's builds must match it.
func indexEXIF(def bool) bool {
	r, err := store.OpenReader(g.db, store.ReaderOptions{})
	if err != nil {
		return def
	}
	defer r.Close()
	exif := def
	r.View(func(s *store.Snapshot) error {
		if id := s.Identity(); id.Model != "" {
			exif = id.EXIF
		}
		return nil
	})
	return exif
}

// stillIndexed splits roots into those the index at db registers now and
// those it does not (forgotten since, or the index replaced); missing is
// true when there is no index any more. An index that cannot be read
// keeps every root: the build says what is wrong.
func stillIndexed(db string, roots []string) (live, gone []string, missing bool) {
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if errors.Is(err, store.ErrNoIndex) {
		return roots, nil, true
	}
	if err != nil {
		return roots, nil, false
	}
	defer r.Close()
	var have []string
	if err := r.View(func(s *store.Snapshot) error {
		var err error
		have, err = s.Roots()
		return err
	}); err != nil {
		return roots, nil, false
	}
	for _, root := range roots {
		if slices.Contains(have, root) {
			live = append(live, root)
		} else {
			gone = append(gone, root)
		}
	}
	return live, gone, false
}

// withinRoots keeps the paths that lie within one of roots.
func withinRoots(paths, roots []string) []string {
	var out []string
	for _, p := range paths {
		for _, r := range roots {
			if store.Within(p, r) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
