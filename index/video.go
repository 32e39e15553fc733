package index

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/store"
)

// Videos. A video file is indexed as its frames where the picture changes
// (Options.Video samples them), each a record VIDEO#t=SECONDS with the
// video's size and mtime and a content hash made from the video's hash and
// the time. A video's frames are written together, in one batch, so a
// commit holds all of them or none: the video is unchanged when all its
// frame records carry its size and mtime. A changed video is sampled again
// and its frames replaced; a removed one loses them all; a renamed or
// copied one takes the frames of a recorded video with the same content
// (no decode, no model; no sampler either: that works without ffmpeg). A
// video that fails is recorded under its own path, as a photo that fails,
// and has no frames.

// videoExts are the extensions (lower case) the walk takes for videos;
// ffprobe confirms them.
var videoExts = map[string]bool{
	".mp4": true, ".mov": true, ".m4v": true, ".mkv": true, ".webm": true, ".avi": true,
	".mts": true, ".m2ts": true, ".3gp": true, ".wmv": true,
}

// IsVideoName reports whether a file name has a video extension (any case).
func IsVideoName(name string) bool { return videoExts[strings.ToLower(filepath.Ext(name))] }

// wanted reports whether the walk takes a file by its name.
func wanted(name string) bool { return IsImageName(name) || IsVideoName(name) }

// VideoSampler samples the frames of a video (video.Sampler does, through
// ffmpeg). Errors are the video's failures, except the context's.
type VideoSampler interface {
	Sample(ctx context.Context, path string) ([]video.Frame, video.Info, error)
}

// frameRec is a frame record the index holds.
type frameRec struct {
	path string
	t    float64
	f    store.File
}

// vframe is a frame of a video job: its time, the hash of its record, and
// the pixels to embed (nil when its vector is reused) or the vector.
type vframe struct {
	t      float64
	hash   store.Hash
	pixels []float32
	vec    []float32
}

// videoResult is what prepare adds to a result for a video.
type videoResult struct {
	live   string     // the still of which the video is a Live Photo's movie (live.go)
	stamp  store.Hash // the still's stat when matched (stillStamp)
	frames []vframe
	old    []frameRec // the video's frame records before this build
	read   bool       // the metadata was read from the file by this code (sampled or probed)
}

// frameHash is the content hash of the frame at t of a video whose bytes
// hash to h: the same video content gives the same frame hashes, so a
// renamed video reuses its vectors.
func frameHash(h store.Hash, t float64) store.Hash {
	return sha256.Sum256([]byte("clipidx video frame\x00" + string(h[:]) + store.FrameSep + store.FrameTime(t)))
}

// sortFrames puts the frame records of each video in time order.
func sortFrames(byVideo map[string][]frameRec) {
	for _, fs := range byVideo {
		sort.Slice(fs, func(i, j int) bool { return fs[i].t < fs[j].t })
	}
}

// planVideo decides what a build does with a video found on disk: read
// when the video needs reading (changed, new, a failure to retry, a Live
// Photo's movie whose still is gone); check when it is unchanged but a
// photo of its name beside it may make it a Live Photo's movie (live.go);
// otherwise it counts it as unchanged. Without a sampler, such a video can
// still take the frames recorded for its bytes (a video renamed, copied
// or touched while ffmpeg is missing): unsampled keeps those jobs.
func (b *builder) planVideo(f found, failed *store.File, stamps *stamper) (read, check bool) {
	if failed != nil && len(b.frames[f.path]) == 0 {
		if _, ok := failed.LiveVideo(); ok {
			if classify(failed, f, nil, nil, b.retry()) != actUnchanged || !stillUnchanged(f.path, failed) {
				return true, false
			}
			b.sum.Unchanged++
			if stampsCtime(failed, f) {
				stamps.add(f.path, f.ctimeNs)
			}
			return false, false
		}
	}
	if b.videoChanged(f, failed) {
		return true, false
	}
	for _, fr := range b.frames[f.path] {
		if stampsCtime(&fr.f, f) {
			stamps.add(fr.path, f.ctimeNs)
		}
	}
	if failed != nil && stampsCtime(failed, f) {
		stamps.add(f.path, f.ctimeNs)
	}
	if f.size > 0 && len(b.live.candidates(f.path)) > 0 {
		return false, true // counted when checked
	}
	b.sum.Unchanged++
	return false, false
}

// errNoSampler is prepareVideo's outcome for a video whose frames would
// have to be sampled when there is no sampler: it is skipped, its records
// kept.
var errNoSampler = errors.New("no video sampler")

// unsampled drops, when there is no sampler, the video jobs whose size no
// video recorded under the build's roots has: none of those can be a
// rename, a move within the roots or a touch, so they are not even hashed
// (nor is the whole index read for the frames of other roots). They are
// counted as skipped; their records, if any, stay (see keepFrame). Those
// with a photo of their name beside them, or recorded as a Live Photo's
// movie, stay as liveOnly jobs: checked for being one, and else skipped
// (a record that calls one a Live Photo's movie goes). The others are
// hashed by prepareVideo and take the frames recorded for their bytes, if
// any.
func (b *builder) unsampled(jobs []job) []job {
	if b.opts.Video != nil {
		return jobs
	}
	sizes := map[int64]bool{}
	for _, recs := range b.frames {
		sizes[recs[0].f.Size] = true
	}
	out := jobs[:0]
	for _, j := range jobs {
		if IsVideoName(j.path) && j.tar == nil && !sizes[j.size] && !j.liveCheck {
			if !isLive(j.old) && len(b.live.candidates(j.path)) == 0 {
				b.sum.VideosSkipped++
				continue
			}
			j.liveOnly = true
		}
		j.seq = len(out)
		out = append(out, j)
	}
	return out
}

// videoChanged reports whether a video needs reading: new, changed since
// its frames or its failure were recorded, or a failure to retry.
func (b *builder) videoChanged(f found, failed *store.File) bool {
	frames := b.frames[f.path]
	if failed == nil && len(frames) > 0 {
		for _, fr := range frames {
			if fr.f.Size != f.size || fr.f.MtimeNs != f.mtimeNs || !sameCtime(fr.f.CtimeNs, f.ctimeNs) {
				return true
			}
		}
		return false
	}
	return failed == nil || len(frames) > 0 || classify(failed, f, nil, nil, b.retry()) != actUnchanged
}

// prepareVideo hashes a video (streaming: a video may be larger than
// memory), and takes its frames from the index when its content is
// recorded (under this path, or another: a rename or a copy), or samples
// and preprocesses them. It runs on a worker goroutine.
func (b *builder) prepareVideo(j job) result {
	r := result{job: j, video: &videoResult{old: b.frames[j.path]}}
	if j.size > 0 {
		if r.video.live, r.video.stamp = b.liveStill(j.path); r.video.live != "" || j.liveCheck {
			return r // a Live Photo's movie, or an unchanged video that is none
		}
		if j.liveOnly {
			r.err = errNoSampler
			return r
		}
	}
	if j.size == 0 {
		r.err = ErrEmpty
		return r
	}
	h, err := hashFile(b.ctx, j.path)
	if err != nil {
		r.err = fmt.Errorf("read: %w", err)
		return r
	}
	r.hash = h
	if same := framesOf(h, r.video.old, b.known); same != nil {
		r.act, r.video.frames = actTouch, same
		r.meta, r.video.read = b.probeMeta(j, "")
		return r
	}
	if same, from := b.recordedVideo(h); same != nil {
		r.act, r.video.frames = actReuse, same
		r.meta, r.video.read = b.probeMeta(j, from)
		return r
	}
	if b.opts.Video == nil {
		r.err = errNoSampler
		return r
	}
	r.act = actEmbed
	if !b.claimVideo(h) {
		// Another video of this run has these bytes: it alone is sampled
		// and embedded, this one takes its frames (collector.add).
		r.dup = true
		r.meta, r.video.read = b.probeMeta(j, "")
		if r.meta == nil { // a new file: at least its own time
			r.meta = videoMeta(video.Info{}, j.mtimeNs)
		}
		return r
	}
	frames, info, err := b.opts.Video.Sample(b.ctx, j.path)
	if err != nil {
		r.err = err
		return r
	}
	r.meta, r.video.read = videoMeta(info, j.mtimeNs), true
	for _, fr := range frames {
		vf := vframe{t: fr.Time, hash: frameHash(h, fr.Time)}
		if !b.known.has(vf.hash) {
			vf.pixels, err = b.opts.PreprocessFrame(fr.Image())
			if err == nil && len(vf.pixels) == 0 {
				err = errors.New("preprocessing returned no pixels")
			}
			if err != nil {
				r.err = fmt.Errorf("frame at %s s: %w", store.FrameTime(fr.Time), err)
				return r
			}
		}
		r.video.frames = append(r.video.frames, vf)
	}
	return r
}

// framesOf returns the frames of recs when they are those of a video with
// content h (every frame hash matches, every vector is stored), else nil.
func framesOf(h store.Hash, recs []frameRec, known hashSet) []vframe {
	if len(recs) == 0 {
		return nil
	}
	out := make([]vframe, 0, len(recs))
	for _, fr := range recs {
		fh := frameHash(h, fr.t)
		if fr.f.Failed() || fr.f.Hash != fh || !known.has(fh) {
			return nil
		}
		out = append(out, vframe{t: fr.t, hash: fh})
	}
	return out
}

// readAllFrames reads the frame records of the whole index when a video
// is to be read, for recordedVideo.
func (b *builder) readAllFrames(s *store.Snapshot, jobs []job) error {
	if !slices.ContainsFunc(jobs, func(j job) bool { return IsVideoName(j.path) && j.tar == nil }) {
		return nil
	}
	all := map[string][]frameRec{}
	err := s.FilesPrefix("", func(p string, f store.File) error {
		if v, t, ok := store.SplitFrame(p); ok {
			all[v] = append(all[v], frameRec{path: p, t: t, f: f})
		}
		return nil
	})
	sortFrames(all)
	b.allFrames = all
	return err
}

// recordedVideo returns the frames of a video recorded anywhere in the
// index (as the build started) with content h, and the path of its first
// frame record, or nil.
func (b *builder) recordedVideo(h store.Hash) ([]vframe, string) {
	for _, recs := range b.allFrames {
		if recs[0].f.Hash == frameHash(h, recs[0].t) {
			if fr := framesOf(h, recs, b.known); fr != nil {
				return fr, recs[0].path
			}
		}
	}
	return nil, ""
}

// hashFile is the SHA-256 of a file's bytes, read as a stream; ctx stops
// it between reads.
func hashFile(ctx context.Context, path string) (store.Hash, error) {
	var h store.Hash
	f, err := os.Open(path)
	if err != nil {
		return h, err
	}
	defer f.Close()
	d := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return h, err
		}
		n, err := f.Read(buf)
		d.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return h, err
		}
	}
	copy(h[:], d.Sum(nil))
	return h, nil
}

// embedFrames runs the encoder on the frames of a video result that need
// it, in passes of BatchSize. A frame the model gives no usable vector
// fails the video; a broken encoder stops the build (the error).
func (b *builder) embedFrames(r *result) error {
	if r.video == nil || r.err != nil {
		return nil
	}
	var q []result
	var at []int
	for i, fr := range r.video.frames {
		if fr.pixels != nil {
			q = append(q, result{job: job{found: found{path: store.FramePath(r.path, fr.t)}}, act: actEmbed, pixels: fr.pixels})
			at = append(at, i)
		}
	}
	for lo := 0; lo < len(q); lo += b.opts.BatchSize {
		part := q[lo:min(lo+b.opts.BatchSize, len(q))]
		if err := b.encode(part); err != nil {
			return err
		}
	}
	for k, i := range at {
		fr := &r.video.frames[i]
		fr.pixels = nil
		if q[k].err != nil {
			r.err = fmt.Errorf("frame at %s s: %w", store.FrameTime(fr.t), q[k].err)
			r.video.frames = nil
			return nil
		}
		fr.vec = q[k].vec
	}
	return nil
}

// recordVideo adds a video's outcome to the batch: its frames, replacing
// those it had, or its failure (which drops them, unless the error is not
// the video's).
func (b *builder) recordVideo(r result) {
	v := r.video
	dropped := v.live == "" && isLive(r.old)
	if dropped {
		// Its record says its still shows it, which no longer holds:
		// the record goes whatever follows, even when the video cannot be
		// sampled or embedded now (live.go).
		b.batch.Delete(r.path)
		b.pending++
	}
	for _, fr := range v.frames {
		if fr.pixels != nil {
			return // not embedded (the build was stopped): the next build does it
		}
	}
	stat := store.File{Size: r.size, MtimeNs: r.mtimeNs, CtimeNs: r.ctimeNs, Hash: r.hash}
	if v.live != "" {
		b.recordLive(r)
	} else if r.liveCheck {
		b.sum.Unchanged++ // checked: no Live Photo's movie
	} else if errors.Is(r.err, errNoSampler) {
		b.sum.VideosSkipped++ // its records, if any, stay (see keepFrame)
	} else if r.err != nil {
		f, ok := b.failure(r.path, stat, r.err)
		if !ok {
			return // not the video's fault: its records stay, it is read again next time
		}
		b.batch.Put(r.path, f, nil)
		b.pending++
		for _, o := range v.old {
			b.batch.Delete(o.path)
			b.pending++
		}
	} else {
		keep := map[string]bool{}
		for _, fr := range v.frames {
			p := store.FramePath(r.path, fr.t)
			keep[p] = true
			f := stat
			f.Hash = fr.hash
			b.batch.Put(p, f, fr.vec) // a nil vec reuses the vector of fr.hash
			b.pending++
			if r.meta != nil {
				b.batch.PutMeta(p, *r.meta)
			}
		}
		if r.video.read {
			b.noteVideoMeta(r.path)
		}
		for _, o := range v.old {
			if !keep[o.path] {
				b.batch.Delete(o.path)
				b.pending++
			}
		}
		if r.old != nil && !dropped { // its earlier failure
			b.batch.Delete(r.path)
			b.pending++
		}
		b.sum.Frames += len(v.frames)
		switch {
		case r.act == actTouch:
			b.sum.Unchanged++
		case r.act == actReuse:
			b.sum.Reused++
		case r.old == nil && len(v.old) == 0:
			b.sum.Added++
		default:
			b.sum.Updated++
		}
	}
	b.done++
	b.event(Event{Phase: "index", Done: b.done, Total: b.total, Path: r.path})
}

// keepFrame reports whether finish keeps an old frame record the walk did
// not see: its video is still there (its frames were replaced, if at all,
// when it was recorded), or was not looked at (no ffmpeg).
func keepFrame(wk *walker, p string) bool {
	v, _, ok := store.SplitFrame(p)
	return ok && wk.saw(v)
}

// countRemoved reports whether deleting the old record p counts as a
// removed file: a video's frames count once, as the video.
func (b *builder) countRemoved(p string, counted map[string]bool) bool {
	v, _, ok := store.SplitFrame(p)
	if !ok {
		return true
	}
	if counted[v] {
		return false
	}
	counted[v] = true
	return true
}

// VideoProber is a VideoSampler that can also read a video's container
// without decoding it (video.Sampler does): a video whose frames are kept
// or reused is probed for its creation time and size, so that its frames'
// metadata follows it.
type VideoProber interface {
	Probe(ctx context.Context, path string) (video.Info, error)
}

// probeMeta is the metadata of a video whose frames are kept or reused,
// and whether it was read from the file: from a probe where the sampler
// can. Without a sampler, or when the probe fails, the container is not
// read: a video's own frames keep their metadata (nil: a probe that
// failed once took its date and place), and frames taken from the
// recorded video whose first frame record is from get a copy of its
// metadata, with this file's time where that video's date was its file's
// time.
func (b *builder) probeMeta(j job, from string) (*store.Meta, bool) {
	if p, ok := b.opts.Video.(VideoProber); ok {
		if in, err := p.Probe(b.ctx, j.path); err == nil {
			return videoMeta(in, j.mtimeNs), true
		}
	}
	if from == "" {
		return nil, false
	}
	var m store.Meta
	var found bool
	err := b.w.View(func(s *store.Snapshot) (err error) {
		m, found, err = s.Meta(from)
		return err
	})
	if err != nil || !found {
		return videoMeta(video.Info{}, j.mtimeNs), false
	}
	if m.TakenSource != store.TakenVideo {
		own := videoMeta(video.Info{}, j.mtimeNs)
		m.Taken, m.TakenNs, m.TakenSource, m.Offset, m.HasOffset = own.Taken, own.TakenNs, own.TakenSource, own.Offset, own.HasOffset
	}
	return &m, false
}

// videoMeta is the Meta of a video's frames: the camera's local time where
// the container keeps it (Apple's creationdate, with its offset, as a
// photo's DateTimeOriginal), else the container's creation time (UTC: it
// is shown on the build's local clock, as a file's time is), else the
// file's modification time; the GPS position and its place, as a photo's;
// the size a player shows.
func videoMeta(in video.Info, mtimeNs int64) *store.Meta {
	m := fileMeta(nil, mtimeNs)
	switch {
	case !in.Taken.IsZero():
		m.Taken, m.TakenNs, m.TakenSource = in.Taken.Unix(), int32(in.Taken.Nanosecond()), store.TakenVideo
		m.Offset, m.HasOffset = int16(in.Offset), in.HasOffset
	case !in.Created.IsZero():
		t := in.Created.In(time.Local)
		_, off := t.Zone()
		m.Taken, m.TakenNs, m.TakenSource = t.Unix()+int64(off), int32(t.Nanosecond()), store.TakenVideo
		m.Offset, m.HasOffset = int16(off/60), true
	}
	if in.HasGPS {
		m.HasGPS, m.Lat, m.Lon, m.HasAlt, m.Alt = true, in.Lat, in.Lon, in.HasAlt, in.Alt
		resolvePlace(m)
	}
	m.Width, m.Height = in.DisplayWidth, in.DisplayHeight
	return m
}

var _ VideoProber = (*video.Sampler)(nil)

// claimVideo reports whether this is the first video of the run with
// content h that needs sampling, as claim does for images (a map of its
// own: a video's frames are not the vector of its bytes).
func (b *builder) claimVideo(h store.Hash) bool { return b.claimIn(b.claimedVideos, h) }

// videoOutcome is what a video sampled in this run gave, for the copies
// of it that wait (collector.videoWaiting).
type videoOutcome struct {
	frames []vframe // times and frame hashes, their vectors stored
	path   string   // the video sampled
	err    error
}

// settleVideo keeps the outcome of a video sampled in this run and
// records the copies that waited for it. A video whose frames were not
// embedded (the build was stopped) settles nothing: its copies, like it,
// are left to the next build.
func (c *collector) settleVideo(r result) {
	if r.err == nil && slices.ContainsFunc(r.video.frames, func(fr vframe) bool { return fr.pixels != nil }) {
		return
	}
	out := videoOutcome{path: r.path, err: r.err}
	if r.err == nil {
		for _, fr := range r.video.frames {
			out.frames = append(out.frames, vframe{t: fr.t, hash: fr.hash})
		}
	}
	c.videos[r.hash] = out
	for _, d := range c.videoWaiting[r.hash] {
		c.recordVideoDup(d, out)
	}
	delete(c.videoWaiting, r.hash)
}

// recordVideoDup records a copy of a video sampled in this run: its
// frames (their vectors found by hash), or the first one's failure.
func (c *collector) recordVideoDup(d result, out videoOutcome) {
	if out.err != nil {
		d.err = asCopy(out.err, out.path, d.path)
	} else {
		d.act = actReuse
		d.video.frames = slices.Clone(out.frames)
	}
	c.b.record(d)
}
