package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// Encoder embeds a pass of preprocessed images: pixels holds n images back
// to back, the result [n, D] (normalised or not). An embedding must not
// depend on the other images of the pass.
type Encoder interface {
	EncodeImages(pixels []float32, n int) ([]float32, error)
}

// PreprocessFunc decodes an image file's bytes into the pixel tensor the
// Encoder takes. It receives the bytes that were hashed, so a vector always
// matches the content hash stored beside it. Errors are per-file failures;
// content that is no image, or an unsupported format, should wrap
// ErrNotImage or ErrUnsupported, as preprocess.Processor.Bytes does.
type PreprocessFunc func(data []byte, path string) ([]float32, error)

var (
	// ErrNotImage is recorded for a file whose content is no image format.
	// It is preprocess.ErrUnknownFormat: the PreprocessFunc tells.
	ErrNotImage = preprocess.ErrUnknownFormat
	// ErrUnsupported is recorded for a recognised format that cannot be
	// decoded (JPEG XL, PSD, a camera RAW without a usable JPEG preview,
	// HEIC or AVIF where their decoders are not built in, a JPEG coding
	// Pillow refuses too; the message names it). HEIC, AVIF and camera
	// RAW are decoded otherwise. It is preprocess.ErrUnsupported: the
	// PreprocessFunc tells.
	ErrUnsupported = preprocess.ErrUnsupported
	// ErrTooLarge is recorded for a file over Options.MaxFileBytes.
	ErrTooLarge = errors.New("file too large")
	// ErrEmpty is recorded for a zero-byte file.
	ErrEmpty = errors.New("empty file")
	// ErrBadEmbedding is recorded when the encoder returns a non-finite or
	// zero vector for a file.
	ErrBadEmbedding = errors.New("model returned an invalid embedding")
	// ErrEncoder is returned when a whole pass fails even image by image:
	// the device, not a file, is at fault, and the build stops. An image
	// that fails alone is reported with it too, and never recorded as the
	// file's failure (see Failure.Transient).
	ErrEncoder = errors.New("encoder failed")
)

// DefaultBatchSize is the images per encoder pass when
// Options.BatchSize is 0.
const DefaultBatchSize = 8

// Options configures Build. Encoder, Preprocess and Identity are required;
// every other zero value picks a sensible default.
type Options struct {
	Encoder    Encoder
	Preprocess PreprocessFunc
	Identity   store.Identity // model identity recorded in and checked against the index
	Reindex    bool           // wipe an index built with another model; replace a damaged one

	BatchSize      int           // images per encoder pass; 0 = DefaultBatchSize
	Workers        int           // read/hash/decode goroutines; 0 = runtime.NumCPU()
	CommitEvery    int           // files per commit; 0 = 64
	CommitInterval time.Duration // longest time between commits; 0 = 2 s
	MaxFileBytes   int64         // larger files fail with ErrTooLarge; 0 = 512 MiB
	// PixelsPerImage is the length of one preprocessed image the Encoder
	// takes (3·S·S); a decode of another length fails its file alone.
	// 0 = the most common length of each pass.
	PixelsPerImage int
	LockTimeout    time.Duration // wait for readers at each commit; 0 = store.DefaultTimeout

	// Reach names the formats Preprocess decodes (nil = preprocess.Formats()).
	// Each failure records it, and a later build whose Reach holds a format
	// the recorded one lacks reads again, even with their stat unchanged,
	// the files that failed as not an image or an unsupported format (an
	// error wrapping ErrNotImage or ErrUnsupported: Preprocess must fail a
	// format outside Reach so) and those an earlier clipidx recorded
	// without a kind.
	Reach []string
	// RetryFailed reads every failed file again, changed or not.
	RetryFailed bool
	// Device and DeviceNote name where the Encoder runs, Weights and
	// Precision how it holds the weights and runs its products, for the
	// record of the build (see store.LastBuild).
	Device, DeviceNote string
	Weights, Precision string
	// DeviceAtEnd, when set, is asked for Device and DeviceNote as the
	// build ends, and what it says replaces them in the record: a model
	// that loads when the build meets work (Ready) only then knows where
	// it runs and what it could not do (packed weights not kept, say).
	DeviceAtEnd func() (device, note string)

	// Progress, when set, is called from the goroutine that called Build.
	Progress func(Event)
	// OnError, when set, is told about each failed file and each folder that
	// could not be read (which never stops the build).
	OnError func(path string, err error)
	// Ready, when set, is called once, before the first pass reaches the
	// Encoder, and not at all when nothing needs embedding: a caller can
	// load its model only when there is work for it. An error stops the
	// build as a failed encoder does (ErrEncoder), with no file recorded
	// as failed.
	Ready func() error

	// Shard and Shards select this machine's share of a build split
	// across Shards machines (--shard I/N): whole tar shards by position,
	// files by a stable hash of their path (see wds_build.go). Shards 0
	// or 1 takes everything.
	Shard, Shards int
	// Captions embeds the caption of each webdataset sample with
	// TextEncoder and stores it beside the sample (exported as text_emb).
	Captions    bool
	TextEncoder TextEncoder

	// Within, when set, limits the build to these folders and files under
	// the roots (a watcher's changed paths; see scope.go): only they are
	// walked, and only records within them are added, changed, removed or
	// kept offline. Records elsewhere stay as they are.
	Within []string
	// LockWait, when set, makes a build that finds another one holding the
	// index wait for it (until ctx is done) instead of failing with
	// store.ErrBuildRunning; it is called once with that error, which
	// names the holder. Command names this build for others' errors and
	// the progress record ("clipidx watch").
	LockWait func(err error)
	Command  string
	// Video samples the frames of video files (see video.go), and
	// PreprocessFrame turns a frame into the Encoder's pixels (the photo
	// preprocessing of a decoded image). Nil Video skips videos: they are
	// counted in Summary.VideosSkipped and their records, if any, kept, so
	// that a later build with a sampler takes them up. A new or changed
	// video whose bytes are those of a recorded one (renamed, copied,
	// touched) still takes its frames, when a video recorded under the
	// roots has its size: no sampling is needed for that.
	Video           VideoSampler
	PreprocessFrame func(img image.Image) ([]float32, error)

	// committed, when set (by this package's tests only), is called on the
	// goroutine that called Build after each commit of file records, with
	// the number of records (files added, changed, failed or removed) this
	// build has committed so far. Tests use it to look at the index, or to
	// stop a build, at a known point instead of after a guessed time.
	committed func(records int)
	// commitFails, when set (by this package's tests only), is asked
	// before each commit and fails it with the error it returns.
	commitFails func() error
	// mountPoint, when set (by this package's tests only), decides which
	// folders are mount points, in place of comparing devices: tests
	// cannot mount a disk.
	mountPoint func(path string) bool
	// entryInfo, when set (by this package's tests only), looks at a
	// folder's entry in place of fs.DirEntry.Info, and canEnter tells
	// whether a folder may be entered: tests run as root, whom a folder
	// without x permission does not stop.
	entryInfo func(path string, e fs.DirEntry) (fs.FileInfo, error)
	canEnter  func(dir string) bool
}

// Event reports progress. Phase is "scan" (Done = files found so far),
// "index" (Done of Total changed files handled; Path the last one),
// "remove" and "done".
type Event struct {
	Phase       string
	Done, Total int
	Path        string
}

// Summary counts files; every file seen falls in exactly one of Added,
// Updated, Unchanged, Reused and Failed (a file whose stat changed but
// whose content did not counts as unchanged; a failed file that did not
// change and was not retried (see Options.Reach) is unchanged too and
// stays recorded as failed; one retried that now works counts as updated).
type Summary struct {
	Added     int       `json:"added"`     // new, embedded by the model
	Updated   int       `json:"updated"`   // changed, embedded by the model
	Unchanged int       `json:"unchanged"` // nothing to do
	Reused    int       `json:"reused"`    // new or changed, vector reused from identical content
	Removed   int       `json:"removed"`   // gone from disk, forgotten
	Failed    int       `json:"failed"`    // failed in this run
	Failures  []Failure `json:"failures"`
	// Offline lists the folders under the roots whose disk looked away:
	// their entries were kept, not removed (see offline.go).
	Offline []store.Offline `json:"offline"`
	// Frames counts the frame records written for the videos added,
	// updated or reused (a video counts once in the counts above);
	// VideosSkipped the videos not read for want of a sampler (no ffmpeg).
	Frames        int `json:"frames,omitempty"`
	VideosSkipped int `json:"videos_skipped,omitempty"`
	// LiveVideos counts the Live Photo movies this build found and left
	// out, their stills being indexed (live.go); those recorded before
	// count as unchanged.
	LiveVideos int `json:"live_videos,omitempty"`
	// Unsaved counts the records of the counts above that a failed commit
	// (a full disk) did not save: they are not in the index, and the next
	// build does that work again.
	Unsaved int `json:"unsaved,omitempty"`
	// Complete is false when the build was cancelled: nothing was removed.
	Complete bool `json:"-"`
	// Backup is where a damaged index was moved when Options.Reindex
	// started over ("" otherwise).
	Backup string `json:"-"`
}

// Failure names a file that could not be indexed and why.
type Failure struct {
	Path  string `json:"path"`
	Error string `json:"error"`
	// Transient marks an error that is not the file's (see transient):
	// it was not recorded as the file's failure, which keeps its earlier
	// record, and the next build tries the file again.
	Transient bool `json:"transient,omitempty"`
}

// MarshalJSON writes f with "path_bytes" (base64) beside "path" when the
// path is not UTF-8 (store.PathBytes).
func (f Failure) MarshalJSON() ([]byte, error) {
	type plain Failure
	return json.Marshal(struct {
		plain
		PathBytes []byte `json:"path_bytes,omitempty"`
	}{plain(f), store.PathBytes(f.Path)})
}

func (o *Options) defaults() error {
	if o.Encoder == nil || o.Preprocess == nil {
		return errors.New("index: Options.Encoder and Options.Preprocess are required")
	}
	if o.Video != nil && o.PreprocessFrame == nil {
		return errors.New("index: Options.Video needs Options.PreprocessFrame")
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.CommitEvery <= 0 {
		o.CommitEvery = 64
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 2 * time.Second
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 512 << 20
	}
	return o.defaultReach()
}

// defaultReach sorts Reach (a copy: the caller's slice stays as it was),
// or sets it to preprocess.Formats() when nil.
func (o *Options) defaultReach() error {
	if o.Reach == nil {
		o.Reach = preprocess.Formats()
		return nil
	}
	o.Reach = slices.Compact(slices.Sorted(slices.Values(o.Reach)))
	for _, f := range o.Reach {
		if f == "" || strings.Contains(f, ",") {
			return fmt.Errorf("index: Options.Reach holds %q: a format name is not empty and has no comma", f)
		}
	}
	return nil
}

// job is one changed file, in walk order.
type job struct {
	seq int
	found
	old *store.File
	tar *tarJob // a webdataset sample or a shard's end (wds_build.go)
	// liveCheck marks an unchanged video with a photo of its name beside
	// it: only checked for being a Live Photo's movie (live.go). liveOnly
	// marks a new or changed one with such a photo (or a Live Photo
	// movie's record) when there is no sampler: checked, and else skipped
	// as unsampled would have.
	liveCheck, liveOnly bool
}

// result is a job after reading, hashing and (when needed) decoding.
type result struct {
	job
	act    action
	hash   store.Hash
	pixels []float32
	err    error // per-file failure
	vec    []float32
	dup    bool // content claimed by another file of this run: take its outcome
	video  *videoResult
	meta   *store.Meta // read from the same bytes (meta.go)
}

// Build brings the index at dbPath up to date with the images under roots
// and returns what it did. Cancelling ctx stops it after committing the
// work already finished (Summary.Complete false, nothing removed); the
// error is then ctx.Err(), joined with the commit's error when that last
// commit failed (what it held is then not saved). Per-file problems never
// stop a build: they are recorded in the index and listed in
// Summary.Failures.
func Build(ctx context.Context, dbPath string, roots []string, opts Options) (*Summary, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if opts.Shards > 1 || opts.Shards < 0 || opts.Shard != 0 {
		if err := checkShard(opts.Shard, opts.Shards); err != nil {
			return nil, err
		}
	}
	if opts.Captions && opts.TextEncoder == nil {
		return nil, errNoTextEncoder
	}
	if len(opts.Within) > 0 && opts.Shards > 1 {
		return nil, errWithinShard
	}
	roots, err := expandRoots(roots)
	if err != nil {
		return nil, err
	}
	abs, err := absRoots(roots)
	if err != nil {
		return nil, err
	}
	if err := missingWithoutIndex(dbPath, abs); err != nil {
		return nil, err
	}
	scope, err := scopeOf(abs, opts.Within)
	if err != nil {
		return nil, err
	}
	w, err := openWriter(ctx, dbPath, opts)
	if err != nil {
		return nil, err
	}
	defer w.Close()

	// What the index knows about the files under the roots (records.go),
	// and which folders earlier builds found to be mount points.
	old := newOldRecords()
	wasMount := map[string]bool{}
	var vmetaVersion uint64
	err = w.View(func(s *store.Snapshot) error {
		if _, ok := opts.Video.(VideoProber); ok {
			v, err := s.VideoMetaVersion()
			if err != nil {
				return err
			}
			vmetaVersion = v
		}
		ms, err := s.Mounts()
		for _, m := range ms {
			wasMount[m] = true
		}
		if err != nil {
			return err
		}
		for _, r := range scope {
			add := func(p string, f store.File) error {
				old.add(p, f)
				return nil
			}
			err := s.Files(r, add)
			if err == nil && IsShardName(r) { // its samples: SHARD.tar#KEY
				err = s.FilesPrefix(r+SampleSep, add)
			}
			if err == nil && IsVideoName(r) { // a partial build naming a video: its frames, VIDEO#t=S
				err = s.FilesPrefix(r+store.FrameSep, add)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	old.done()

	b := &builder{opts: opts, w: w, claimed: map[store.Hash]bool{}, claimedVideos: map[store.Hash]bool{},
		sum:  &Summary{Failures: []Failure{}, Offline: []store.Offline{}, Backup: w.Backup()},
		prog: progressState{roots: abs, started: time.Now()}, scope: scope,
		old: old, frames: old.frames, ctx: ctx}
	b.vmeta = videoMetaState{read: map[string]bool{}, stale: b.prober() != nil && vmetaVersion < videoMetaVersion}
	wk := newWalker(ctx, abs)
	wk.old = old
	wk.onError, wk.wasMount, wk.isMount, wk.entryInfo, wk.canEnter = opts.OnError, wasMount, opts.mountPoint, opts.entryInfo, opts.canEnter
	wk.progress = func(n int) { b.event(Event{Phase: "scan", Done: n}) }
	wk.held = func(p string) bool { return holdsRecords(b.oldPaths(), p) }
	// A root that no longer exists is away if it held records, an error
	// (before anything is written) otherwise.
	present, err := walkScope(wk, scope, func(p string) bool { return slices.Contains(abs, p) })
	if err != nil {
		if ctx.Err() != nil {
			return b.finish(ctx, abs, nil)
		}
		return nil, err
	}
	goneMounts(wk, present)
	b.event(Event{Phase: "scan", Done: wk.found()})
	if err := checkShare(dbPath, old, wk, abs, opts.Shard, opts.Shards); err != nil {
		return nil, err
	}
	// Recorded before any file, so that serve can show every record.
	if err := w.AddRoots(abs); err != nil {
		return nil, err
	}
	if err := w.View(func(s *store.Snapshot) (err error) { b.registered, err = s.Roots(); return err }); err != nil {
		return nil, err
	}
	b.unwalked = unwalkedRoots(b.registered, scope)
	selectShare(wk, abs, opts.Shard, opts.Shards)
	if err := b.planShards(wk); err != nil {
		return nil, err
	}
	// A dangling link that carried indexed files may be a disk that is not
	// mounted: say why its entries stay. One that never did is said too
	// when it may lead to photos (a folder, an image, a video, a shard), or
	// the photos behind it would be missing without a word.
	if len(wk.dangling) > 0 {
		for _, l := range wk.dangling {
			switch {
			case holdsRecords(b.oldPaths(), l.path):
				wk.fail(l.path, fmt.Errorf("%w (%v)", ErrUnreachable, l.err))
			case mayHoldPhotos(l.path):
				wk.fail(l.path, nowhere(l))
			}
		}
	}

	var jobs []job
	var fill []int                     // jobs whose record was kept plain (fillOld)
	stamps := &stamper{b: b, ctx: ctx} // ctimes for unchanged records written without one
	b.sum.Unchanged += wk.same         // found unchanged by the walk (records.go)
	for _, f := range wk.files {
		r := old.find(f.path)
		o := old.record(r) // a video's record is always kept whole
		if IsVideoName(f.path) {
			if read, check := b.planVideo(f, o, stamps); read || check {
				jobs = append(jobs, job{seq: len(jobs), found: f, old: o, liveCheck: !read})
			}
			continue
		}
		if unchanged, stamp := b.unchangedFile(r, f); unchanged {
			b.sum.Unchanged++
			if stamp {
				stamps.add(f.path, f.ctimeNs)
			}
			continue
		}
		if r != nil && o == nil {
			fill = append(fill, len(jobs))
		}
		jobs = append(jobs, job{seq: len(jobs), found: f, old: o})
	}
	if err := stamps.flush(); err != nil {
		return nil, err
	}
	if err := b.fillOld(jobs, fill); err != nil {
		return nil, err
	}
	jobs = b.unsampled(jobs)
	if err := b.startIndexPhase(wk.found(), len(jobs)); err != nil {
		return nil, err
	}
	if len(jobs) > 0 || len(b.tar.tars) > 0 {
		// Every content hash with a vector, for reuse (only read when needed).
		err := w.View(func(s *store.Snapshot) error {
			if err := b.readAllFrames(s, jobs); err != nil {
				return err
			}
			known, err := readHashes(s)
			b.known = known
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if err := b.run(ctx, jobs); err != nil {
		if ctx.Err() != nil {
			sum, ferr := b.finish(ctx, abs, nil)
			if !errors.Is(err, ctx.Err()) {
				// Stopped, and the last commit failed too: what it held is
				// lost (the next build does it again), and the caller
				// must not say the finished work is saved.
				ferr = errors.Join(err, ferr)
			}
			return sum, ferr
		}
		b.sortFailures()
		if errors.Is(err, ErrEncoder) {
			// The files recorded before the device failed are good: keep them.
			if cerr := b.maybeCommit(true); cerr != nil {
				return b.sum, errors.Join(err, cerr)
			}
		}
		return b.sum, err
	}
	if err := b.completeMeta(ctx, wk); err != nil { // meta.go
		if ctx.Err() != nil {
			return b.finish(ctx, abs, nil)
		}
		return b.sum, err
	}
	return b.finish(ctx, abs, wk)
}

type builder struct {
	opts Options
	w    *store.Writer
	// registered is every root the index holds (this build's included);
	// unwalked those of them this build's walk never enters
	// (unwalkedRoots): their records are kept.
	registered, unwalked []string
	known                hashSet // hashes with a stored vector (read-only during run)
	// old holds the records under the scope as the build started
	// (records.go); sorted their paths, when asked (oldPaths).
	old    *oldRecords
	sorted []string

	mu            sync.Mutex
	claimed       map[store.Hash]bool // contents being embedded in this run (see claim)
	claimedVideos map[store.Hash]bool // video contents being sampled in this run (claimVideo)
	sum           *Summary

	canary     []float32 // pixels of an image the encoder embedded (see canaryFails)
	ready      bool      // Options.Ready has run
	tar        tarState  // webdataset shards (wds_build.go)
	prog       progressState
	scope      []string // the paths walked (Options.Within, else the roots)
	ctx        context.Context
	frames     map[string][]frameRec // frame records under the roots, by video
	allFrames  map[string][]frameRec // of the whole index (recordedVideo)
	live       liveStills            // photos beside videos (live.go)
	vmeta      videoMetaState        // upgrade of the videos' metadata (videometa.go)
	batch      store.Batch
	pending    int // files in batch
	committed  int // records committed by this build
	lastCommit time.Time
	done       int
	total      int
}

func (b *builder) event(e Event) {
	if b.opts.Progress != nil {
		b.opts.Progress(e)
	}
}

// run processes the changed files: workers read, hash and decode ahead;
// this goroutine takes their results as they come, records at once what
// needs no model, runs the encoder in passes (a partial one when the
// oldest image has waited CommitInterval) and commits every CommitEvery
// files or CommitInterval. On cancel it records every finished result.
func (b *builder) run(ctx context.Context, jobs []job) error {
	b.total = len(jobs)
	b.lastCommit = time.Now()
	if len(jobs) == 0 && len(b.tar.tars) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.ctx = ctx
	// tokens bound the files between the feeder and the consumer, so that
	// decoded pixels never pile up faster than the encoder takes them.
	ahead := 2*b.opts.BatchSize + 2*b.opts.Workers
	tokens := make(chan struct{}, ahead)
	jobc := make(chan job)
	resc := make(chan result, ahead)
	go func() {
		defer close(jobc)
		for _, j := range jobs {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobc <- j:
			case <-ctx.Done():
				return
			}
		}
		b.feedShards(ctx, len(jobs), tokens, jobc)
	}()
	var wg sync.WaitGroup
	for range b.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobc {
				r := b.prepare(j)
				select {
				case resc <- r:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(resc) }()

	c := b.newCollector()
	// The ticker wakes the loop when no result arrives, so that a partial
	// pass and pending records are still committed within CommitInterval.
	tick := time.NewTicker(max(b.opts.CommitInterval/4, time.Millisecond))
	defer tick.Stop()
	for open := true; open; {
		select {
		case r, ok := <-resc:
			if !ok {
				open = false
				break
			}
			<-tokens
			if err := b.embedFrames(&r); err != nil {
				return err
			}
			c.add(r)
		case <-tick.C:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			// Keep every finished result, but encode nothing more: that
			// would delay the exit.
			for drained := false; !drained; {
				select {
				case r, ok := <-resc:
					drained = !ok
					if ok {
						c.add(r)
					}
				default:
					drained = true
				}
			}
			if cerr := b.maybeCommit(true); cerr != nil {
				return cerr
			}
			return err
		}
		if len(c.queue) >= b.opts.BatchSize || len(c.queue) > 0 && time.Since(c.queuedAt) >= b.opts.CommitInterval {
			if err := c.flush(); err != nil {
				return err
			}
		}
		if err := b.maybeCommit(false); err != nil {
			return err
		}
	}
	if err := c.flush(); err != nil {
		return err
	}
	c.orphans()
	return b.maybeCommit(true)
}

// collector takes prepared results as they arrive (in any order) and
// records them: at once when no model work is needed, after their encoder
// pass otherwise, and a duplicate of content embedded in this run after the
// file that carries that content.
type collector struct {
	b        *builder
	queue    []result                    // embeddings waiting for an encoder pass
	queuedAt time.Time                   // arrival of queue[0]
	waiting  map[store.Hash][]result     // duplicates whose first file is not done
	outcome  map[store.Hash]firstOutcome // first files done

	videoWaiting map[store.Hash][]result     // copies of a video not sampled yet
	videos       map[store.Hash]videoOutcome // videos sampled in this run
}

func (b *builder) newCollector() *collector {
	return &collector{b: b, waiting: map[store.Hash][]result{}, outcome: map[store.Hash]firstOutcome{},
		videoWaiting: map[store.Hash][]result{}, videos: map[store.Hash]videoOutcome{}}
}

func (c *collector) add(r result) {
	switch {
	case r.video != nil && r.dup:
		if out, ok := c.videos[r.hash]; ok {
			c.recordVideoDup(r, out)
		} else {
			c.videoWaiting[r.hash] = append(c.videoWaiting[r.hash], r)
		}
	case r.video != nil:
		c.b.record(r) // its frames went through the encoder already
		if r.act == actEmbed {
			c.settleVideo(r)
		}
	case r.dup:
		if o, ok := c.outcome[r.hash]; ok {
			c.recordDup(r, o)
		} else {
			c.waiting[r.hash] = append(c.waiting[r.hash], r)
		}
	case r.act == actEmbed && r.err == nil:
		if len(c.queue) == 0 {
			c.queuedAt = time.Now()
		}
		c.queue = append(c.queue, r)
	default:
		c.settle(r)
	}
}

// settle records r and then the duplicates that waited for it.
func (c *collector) settle(r result) {
	c.b.record(r)
	if r.act != actEmbed {
		return
	}
	o := firstOutcome{r.path, r.err}
	c.outcome[r.hash] = o
	for _, d := range c.waiting[r.hash] {
		c.recordDup(d, o)
	}
	delete(c.waiting, r.hash)
}

// firstOutcome is how the first file of a content ended: err nil when
// its vector is stored.
type firstOutcome struct {
	path string
	err  error
}

// copyError is the first file's error as a copy of its content reports
// it: the same error, its message naming the copy (a failure recorded
// for b.png once read "decode a.jpg: ...", and kept saying so after
// a.jpg was deleted).
type copyError struct {
	msg string
	err error
}

func (e *copyError) Error() string { return e.msg }
func (e *copyError) Unwrap() error { return e.err }

// asCopy returns err, the error of first, as path's.
func asCopy(err error, first, path string) error {
	if err == nil || first == path {
		return err
	}
	return &copyError{strings.ReplaceAll(err.Error(), first, path), err}
}

// recordDup records a duplicate with the outcome of its first file.
func (c *collector) recordDup(r result, o firstOutcome) {
	if o.err != nil {
		r.err = asCopy(o.err, o.path, r.path)
	} else {
		r.act = actReuse
	}
	c.b.record(r)
}

// flush runs the encoder on the queue and records it.
func (c *collector) flush() error {
	if len(c.queue) == 0 {
		return nil
	}
	if err := c.b.encode(c.queue); err != nil {
		return err
	}
	for _, r := range c.queue {
		c.settle(r)
	}
	clear(c.queue)
	c.queue = c.queue[:0]
	return nil
}

// orphans records the duplicates whose first file never arrived (none
// unless the pipeline is broken), so that no file is silently dropped.
func (c *collector) orphans() {
	for _, waiting := range []map[store.Hash][]result{c.waiting, c.videoWaiting} {
		for _, list := range waiting {
			for _, d := range list {
				d.err = errors.New("internal error: the first file with this content was not processed; run the build again")
				c.b.record(d)
			}
		}
		clear(waiting)
	}
}

// claim reports whether this is the first file of the run with content h
// that needs the model. Workers call it before decoding, so a duplicate
// costs a hash, not a decode.
func (b *builder) claim(h store.Hash) bool { return b.claimIn(b.claimed, h) }

// claimIn adds h to the set of contents claimed in this run, and reports
// whether it was not there yet.
func (b *builder) claimIn(set map[store.Hash]bool, h store.Hash) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if set[h] {
		return false
	}
	set[h] = true
	return true
}

// readRegular reads the file at path whole when it is a regular file of
// at most limit bytes: the walk found it so, but it may have changed since
// (grown, or replaced by a named pipe that would block the read).
func readRegular(path string, limit int64) ([]byte, error) {
	// Looked at before the open, which would wait for a pipe's writer.
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, fileType(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: grew over the limit of %d MiB", ErrTooLarge, limit>>20)
	}
	return data, nil
}

// prepare reads, hashes, classifies and, when the model must run, decodes
// one file. It runs on a worker goroutine.
func (b *builder) prepare(j job) result {
	if IsVideoName(j.path) && j.tar == nil {
		return b.prepareVideo(j)
	}
	r := result{job: j}
	if j.tar != nil && (j.tar.end != nil || j.tar.err != nil) {
		r.err = j.tar.err // a sample laid out wrong, or a shard's end
		return r
	}
	if j.size > b.opts.MaxFileBytes {
		r.err = fmt.Errorf("%w: %d MiB, the limit is %d MiB", ErrTooLarge, j.size>>20, b.opts.MaxFileBytes>>20)
		return r
	}
	var data []byte
	var err error
	if j.tar != nil {
		data = j.tar.data // read from the shard's stream
	} else {
		data, err = readRegular(j.path, b.opts.MaxFileBytes)
	}
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNotRegular) {
		r.err = err
		return r
	}
	if err != nil {
		r.err = fmt.Errorf("read: %w", err)
		return r
	}
	if len(data) == 0 {
		r.err = ErrEmpty
		return r
	}
	r.hash = sha256.Sum256(data)
	mtimeNs := j.mtimeNs
	if j.tar != nil {
		mtimeNs = j.tar.mtimeNs
	}
	r.meta = fileMeta(data, mtimeNs)
	if j.tar == nil { // a shard's sample plays no video of its own: serve reads files
		readMotion(r.meta, bytes.NewReader(data), int64(len(data)))
	}
	r.act = classify(j.old, j.found, &r.hash, b.known.has, b.retry())
	if r.act != actEmbed {
		return r
	}
	if !b.claim(r.hash) {
		// Another file of this run carries this content: it alone is
		// decoded and embedded, this one takes its outcome.
		r.dup = true
		return r
	}
	// The decoder recognises the format from the content, and fails the
	// file with ErrNotImage or ErrUnsupported (naming the format).
	r.pixels, r.err = b.opts.Preprocess(data, j.path)
	switch want := b.opts.PixelsPerImage; {
	case r.err != nil:
	case len(r.pixels) == 0:
		r.err = errors.New("decoder returned no pixels")
	case want > 0 && len(r.pixels) != want:
		r.err = fmt.Errorf("decoder returned %d values, want %d", len(r.pixels), want)
		r.pixels = nil
	}
	return r
}

// encode fills vec (or err) of every embedding result in q, in passes of
// up to BatchSize. A failed pass is retried image by image so that one bad
// input fails only its own file; if every image of a pass of two or more
// fails alone too, or a lone failure comes with a failure of an input that
// worked before, the encoder itself is broken and the build stops.
func (b *builder) encode(q []result) error {
	var idx []int
	for i := range q {
		if q[i].act == actEmbed && q[i].err == nil && !q[i].dup {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	size := b.opts.PixelsPerImage
	if size <= 0 {
		size = commonLen(q, idx)
	}
	var pix []float32
	var use []int
	for _, i := range idx {
		if len(q[i].pixels) != size {
			q[i].err = fmt.Errorf("decoder returned %d values, want %d", len(q[i].pixels), size)
			continue
		}
		pix = append(pix, q[i].pixels...)
		use = append(use, i)
	}
	if len(use) == 0 {
		return nil // every decode had the wrong size: those files failed alone
	}
	if !b.ready {
		b.ready = true
		if b.opts.Ready != nil {
			if err := b.opts.Ready(); err != nil {
				return fmt.Errorf("%w: %w", ErrEncoder, err)
			}
		}
	}
	dim := b.opts.Identity.Dim
	out, err := b.opts.Encoder.EncodeImages(pix, len(use))
	if err == nil && len(out) != len(use)*dim {
		err = fmt.Errorf("encoder returned %d values for %d images of dimension %d", len(out), len(use), dim)
	}
	if err == nil {
		for k, i := range use {
			q[i].vec = out[k*dim : (k+1)*dim]
		}
	} else {
		failed := 0
		for _, i := range use {
			v, e := b.opts.Encoder.EncodeImages(q[i].pixels, 1)
			if e == nil && len(v) != dim {
				e = fmt.Errorf("encoder returned %d values for one image of dimension %d", len(v), dim)
			}
			if e != nil {
				q[i].err = fmt.Errorf("%w: %v", ErrEncoder, e)
				failed++
				continue
			}
			q[i].vec = v
		}
		// One image failing alone proves nothing about the device: a pass
		// of one (--batch 1, a partial pass, the last image) fails only its
		// file unless an input that worked before fails now too.
		if failed == len(use) && (len(use) >= 2 || b.canaryFails()) {
			return fmt.Errorf("%w: %v", ErrEncoder, err)
		}
	}
	bad := 0
	for _, i := range use {
		if q[i].err == nil && !usable(q[i].vec, dim) {
			q[i].err, q[i].vec = ErrBadEmbedding, nil
			bad++
		}
		if q[i].err == nil {
			b.canary = q[i].pixels
		}
		q[i].pixels = nil
	}
	// Every image of a pass invalid is the model's fault (weights that
	// give NaN, a device computing garbage), not each file's: by the same
	// rule as a pass that fails.
	if bad > 0 && bad == len(use) && (len(use) >= 2 || b.canaryFails()) {
		return fmt.Errorf("%w: %w for every image of a pass of %d (not finite, or all zero)", ErrEncoder, ErrBadEmbedding, len(use))
	}
	return nil
}

// commonLen is the most common pixel count among q[idx] (the first of
// equals), so that one odd decode fails alone, not the rest of its pass.
func commonLen(q []result, idx []int) int {
	count := map[int]int{}
	best := len(q[idx[0]].pixels)
	for _, i := range idx {
		n := len(q[i].pixels)
		count[n]++
		if count[n] > count[best] {
			best = n
		}
	}
	return best
}

// canaryFails re-runs the encoder on the last input it embedded; false
// when there is none yet.
func (b *builder) canaryFails() bool {
	if b.canary == nil {
		return false
	}
	v, err := b.opts.Encoder.EncodeImages(b.canary, 1)
	return err != nil || !usable(v, b.opts.Identity.Dim)
}

// usable reports whether v is a vector the index can store: dim finite
// values, not all zero (store.Normalize is the one check).
func usable(v []float32, dim int) bool {
	if len(v) != dim {
		return false
	}
	_, err := store.Normalize(v)
	return err == nil
}

// retry is the rule for failures whose stat did not change.
func (b *builder) retry() retryRule {
	return retryRule{all: b.opts.RetryFailed, reach: b.opts.Reach}
}

// failure reports a failed file and returns its record, or false when the
// error is not the file's (see transient): then nothing is recorded and
// the file's earlier record, if any, stays.
func (b *builder) failure(path string, f store.File, err error) (store.File, bool) {
	tr := transient(err)
	b.sum.Failed++
	b.sum.Failures = append(b.sum.Failures, Failure{Path: path, Error: err.Error(), Transient: tr})
	if b.opts.OnError != nil {
		b.opts.OnError(path, err)
	}
	f.Err, f.Kind, f.Reach = err.Error(), failKind(err), strings.Join(b.opts.Reach, ",")
	return f, !tr
}

// record adds one finished result to the pending batch and the summary.
func (b *builder) record(r result) {
	if r.video != nil {
		b.recordVideo(r)
		return
	}
	if r.tar != nil && b.recordTar(r) {
		return // a shard's end
	}
	f := store.File{Size: r.size, MtimeNs: r.mtimeNs, CtimeNs: r.ctimeNs, Hash: r.hash}
	if r.err != nil {
		if f, ok := b.failure(r.path, f, r.err); ok {
			b.batch.Put(r.path, f, nil)
			b.pending++
		}
	} else {
		b.pending++
		b.batch.Put(r.path, f, r.vec)
		if r.meta != nil {
			b.putFileMeta(r.path, r.meta)
		}
		switch {
		case r.act == actTouch:
			b.sum.Unchanged++
		case r.act == actReuse:
			b.sum.Reused++
		case r.old == nil:
			b.sum.Added++
		default:
			b.sum.Updated++
		}
	}
	if r.tar != nil {
		b.recordSample(r)
	}
	b.done++
	b.prog.last = r.path
	b.event(Event{Phase: "index", Done: b.done, Total: b.total, Path: r.path})
}

// sortFailures orders Summary.Failures by path: workers finish in any
// order, and the --json summary must not depend on it.
func (b *builder) sortFailures() {
	sort.Slice(b.sum.Failures, func(i, j int) bool { return b.sum.Failures[i].Path < b.sum.Failures[j].Path })
}

// stamper commits the ctimes of unchanged records written without one,
// 20,000 a transaction of their own, as the walk's files are planned: an
// index an older clipidx wrote takes every file's once, and a file changed
// after that (its ctime moved) is read again. A stopped build leaves the
// rest to the next one.
type stamper struct {
	b     *builder
	ctx   context.Context
	batch store.Batch
	err   error
}

func (s *stamper) add(path string, ns int64) {
	if s.err != nil || s.ctx.Err() != nil {
		return
	}
	if s.batch.StampCtime(path, ns); s.batch.Len() >= 20000 {
		s.err = s.flush()
	}
}

// flush commits the stamps added since the last commit; it returns the
// first commit's error.
func (s *stamper) flush() error {
	if s.err != nil || s.batch.Len() == 0 || s.ctx.Err() != nil {
		return s.err
	}
	if err := s.b.w.Commit(&s.batch); err != nil {
		return fmt.Errorf("commit to %s: %w", s.b.w.Path(), err)
	}
	s.batch.Reset()
	return nil
}

func (b *builder) maybeCommit(force bool) error {
	if b.pending == 0 || (!force && b.pending < b.opts.CommitEvery && time.Since(b.lastCommit) < b.opts.CommitInterval) {
		return nil
	}
	if err := b.flushTexts(); err != nil {
		return err
	}
	b.w.StageProgress(b.progress("index"))
	if b.opts.commitFails != nil {
		if err := b.opts.commitFails(); err != nil {
			b.sum.Unsaved = b.pending
			return fmt.Errorf("commit to %s: %w", b.w.Path(), err)
		}
	}
	if err := b.w.Commit(&b.batch); err != nil {
		b.sum.Unsaved = b.pending
		return fmt.Errorf("commit to %s: %w", b.w.Path(), err)
	}
	b.batch.Reset()
	b.committed += b.pending
	b.pending = 0
	b.lastCommit = time.Now()
	if b.opts.committed != nil {
		b.opts.committed(b.committed)
	}
	return nil
}

// maxRecordedWithin bounds the paths a partial build records: status
// --json and /api/status, polled every few seconds, carry them.
const maxRecordedWithin = 32

// within is the paths a partial build walked (Options.Within, as made
// absolute), nil for a build of the whole roots; past maxRecordedWithin,
// the folders that hold them (one level up at a time, no higher than
// their roots), so that 3,000 copies into a folder record that folder.
func (b *builder) within(roots []string) []string {
	if len(b.opts.Within) == 0 {
		return nil
	}
	out := b.scope
	for len(out) > maxRecordedWithin {
		up := make([]string, 0, len(out))
		for _, p := range out {
			if !slices.Contains(roots, p) {
				p = filepath.Dir(p)
			}
			up = append(up, p)
		}
		slices.Sort(up)
		up = store.Outermost(slices.Compact(up))
		if len(up) == len(out) && slices.Equal(up, out) {
			break // every path is a root
		}
		out = up
	}
	return out
}

// unwalkedRoots returns the roots of registered that lie within one of
// the paths a build walks (roots) but that a walk of it never enters: a hidden or clutter folder
// (Skips), a tar shard (a walk reads a shard only when it is a root).
// Indexed on their own, they are not gone because this build did not look.
func unwalkedRoots(registered, roots []string) []string {
	var out []string
	for _, h := range registered {
		if slices.Contains(roots, h) {
			continue // walked as a root of its own
		}
		if slices.ContainsFunc(roots, func(r string) bool {
			return h != r && store.Within(h, r) && (Skips(r, h) || IsShardName(h))
		}) {
			out = append(out, h)
		}
	}
	return out
}

// withinAny reports whether p lies within one of dirs (store.Within).
func withinAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return store.Within(p, d) })
}

// collect frees the vectors no file uses any more: all of them after a
// complete build of every indexed folder, else those that lost their last
// file more than store.KeepUnused ago. A file that left a folder this
// build looked at may have moved to one a later build looks at (a photo
// moved from 2019/ to 2020/, then each folder built on its own; a
// watcher's builds of the paths that settled, which may take a rename's
// old name before its new one): that build reuses the vector instead of
// running the model again.
func (b *builder) collect(roots []string, complete bool) error {
	all := complete && len(b.opts.Within) == 0 && len(b.unwalked) == 0 && b.registered != nil
	for _, h := range b.registered {
		all = all && withinAny(h, roots)
	}
	var err error
	if all {
		_, err = b.w.GC()
	} else {
		_, err = b.w.GCQueuedBefore(time.Now().Add(-store.KeepUnused))
	}
	return err
}

// finish removes files that disappeared (only after a complete walk, and
// none on a disk that is away), records the offline folders, frees unused
// vectors and records the build.
func (b *builder) finish(ctx context.Context, roots []string, wk *walker) (*Summary, error) {
	complete := wk != nil && ctx.Err() == nil
	b.sortFailures()
	if complete {
		b.event(Event{Phase: "remove"})
		counted := map[string]bool{}
		for r := range b.old.all() {
			if r.flags&recWalked != 0 {
				continue // still there
			}
			p := b.old.path(r)
			if b.keepRecord(p) || wk.awayWithin(p) || keepFrame(wk, p) || withinAny(p, b.unwalked) {
				continue // still there, on a disk that is away, or not looked at
			}
			b.batch.Delete(p)
			b.pending++
			if b.countRemoved(p, counted) {
				b.sum.Removed++
			}
		}
		if err := b.maybeCommit(true); err != nil {
			return b.sum, err
		}
		if err := b.recordAway(b.scope, wk); err != nil {
			return b.sum, err
		}
		if err := b.settleVideoMeta(); err != nil {
			return b.sum, err
		}
	}
	if err := b.collect(roots, complete); err != nil {
		return b.sum, err
	}
	// The index records the failures themselves; keep only the counts.
	phase := "done"
	if !complete {
		phase = "stopped"
	}
	b.w.StageProgress(b.progress(phase))
	js, _ := json.Marshal(map[string]int{"added": b.sum.Added, "updated": b.sum.Updated, "unchanged": b.sum.Unchanged,
		"reused": b.sum.Reused, "removed": b.sum.Removed, "failed": b.sum.Failed})
	device, note := b.opts.Device, b.opts.DeviceNote
	if b.opts.DeviceAtEnd != nil {
		device, note = b.opts.DeviceAtEnd()
	}
	err := b.w.Finish(store.LastBuild{Time: time.Now().UTC().Format(time.RFC3339), Roots: roots, Within: b.within(roots), Complete: complete, Summary: js,
		Device: device, DeviceNote: note, Weights: b.opts.Weights, Precision: b.opts.Precision})
	b.sum.Complete = complete
	b.event(Event{Phase: "done", Done: b.done, Total: b.total})
	if err != nil {
		return b.sum, err
	}
	return b.sum, ctx.Err()
}
