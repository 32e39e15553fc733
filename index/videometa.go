package index

import (
	"context"
	"errors"
	"os"

	"github.com/clipidx/clipidx/store"
)

// Upgrading the metadata of video frames. The frames of a video carry the
// metadata videoMeta makes of its probe; when that changes (a new tag
// read), an index written before keeps the old metadata of every
// unchanged video, since a build skips those. The index records the
// version of the code that read its videos (store's VideoMetaVersion);
// while it is older than videoMetaVersion, every build probes again the
// unchanged videos it walks (ffprobe only: no decode, no model) and
// rewrites the metadata of their frames, and a complete full build
// records the new version once every video the index holds frames of has
// been read by this code. The rules:
//
//   - Each video read by this code is marked in the index (store's
//     MarkVideoRead, committed with its frames' metadata), so that an
//     upgrade probes each video once, whichever builds walk it: roots
//     built one at a time, partial builds, shares of a shared build,
//     stopped builds, a disk away for months.
//   - Without a prober (no ffmpeg) nothing is read and the version stays:
//     a later build with ffprobe does the work. Nothing counts as failed.
//   - A video whose probe fails, or that changes under the probe, keeps
//     its metadata (it is not a failure: its frames are sound) and stays
//     unmarked, so that a later build tries again.
//   - A build that marked a video records the version once every frame
//     in the whole index belongs to a marked video (the marks are then
//     dropped). A build that marked none does not look: it found nothing
//     to do under its roots, and the version is only a shortcut.

// videoMetaVersion is the version of what videoMeta reads: 1 the
// container's creation_time and size; 2 adds Apple's local creationdate
// and the ISO 6709 GPS position and its place.
const videoMetaVersion = 2

// videoMetaState is what a build knows of the upgrade.
type videoMetaState struct {
	stale bool            // the index's version is older than videoMetaVersion, and there is a prober
	read  map[string]bool // videos whose frames this build gave this code's metadata
}

// prober is the build's VideoProber, nil without one.
func (b *builder) prober() VideoProber {
	p, _ := b.opts.Video.(VideoProber)
	return p
}

// noteVideoMeta records that the frames of video got this code's
// metadata (recordVideo, after a probe or a sampling that read it), and
// marks it in the index while the index's version is older.
func (b *builder) noteVideoMeta(video string) {
	if b.prober() == nil {
		return
	}
	b.vmeta.read[video] = true
	if b.vmeta.stale {
		b.batch.MarkVideoRead(video, videoMetaVersion)
	}
}

// staleVideo is an unchanged video whose frames the upgrade rewrites.
type staleVideo struct {
	f      found
	frames []frameRec
	metas  map[string]store.Meta // the frames' metadata now
}

// refreshVideoMeta probes again, when the index's video metadata version
// is old, the unchanged videos of the walk this build did not read, and
// rewrites the metadata of their frames that differs.
func (b *builder) refreshVideoMeta(ctx context.Context, wk *walker) error {
	p := b.prober()
	if p == nil || !b.vmeta.stale {
		return nil
	}
	var todo []staleVideo
	err := b.w.View(func(s *store.Snapshot) error {
		for _, f := range wk.files {
			frames := b.frames[f.path]
			if len(frames) == 0 || b.vmeta.read[f.path] || b.videoChanged(f, nil) || s.VideoRead(f.path) >= videoMetaVersion {
				continue // no frames, read (or left) by this build's pass, or by an earlier one
			}
			sv := staleVideo{f: f, metas: map[string]store.Meta{}}
			for _, fr := range frames {
				// A frame this build removed (the video found to be a Live
				// Photo's movie, recorded as one) takes no metadata.
				if _, ok, err := s.File(fr.path); err != nil {
					return err
				} else if !ok {
					continue
				}
				sv.frames = append(sv.frames, fr)
				m, ok, err := s.Meta(fr.path)
				if err != nil {
					return err
				}
				if ok {
					sv.metas[fr.path] = m
				}
			}
			if len(sv.frames) > 0 {
				todo = append(todo, sv)
			}
		}
		return nil
	})
	if err != nil || len(todo) == 0 {
		return err
	}
	read := func(sv staleVideo) *store.Meta { return b.reprobe(ctx, p, sv.f) }
	return metaPass(ctx, b, todo, read, func(sv staleVideo, m *store.Meta) string {
		if m == nil { // not probed: a later build tries again
			return sv.f.path
		}
		for _, fr := range sv.frames {
			if old, ok := sv.metas[fr.path]; !ok || old != *m {
				b.batch.PutMeta(fr.path, *m)
				b.pending++
			}
		}
		b.noteVideoMeta(sv.f.path)
		b.pending++
		return sv.f.path
	})
}

// reprobe is the metadata of video f's frames from a new probe, as a
// build that sampled it would record (videoMeta: its modification time
// without a date in the container); nil when the probe fails or the file
// is no longer the one walked.
func (b *builder) reprobe(ctx context.Context, p VideoProber, f found) *store.Meta {
	in, err := p.Probe(ctx, f.path)
	if err != nil {
		return nil
	}
	st, err := os.Stat(f.path)
	if err != nil || st.Size() != f.size || st.ModTime().UnixNano() != f.mtimeNs {
		return nil
	}
	return videoMeta(in, f.mtimeNs)
}

// errUnread stops settleVideoMeta's walk at a video not read by this
// code.
var errUnread = errors.New("a video not read by this code")

// settleVideoMeta records videoMetaVersion at the end of a build that
// marked videos (after its commit and removals) when the upgrade is done:
// every frame of the index is from a video marked as read by this code.
func (b *builder) settleVideoMeta() error {
	if !b.vmeta.stale || len(b.vmeta.read) == 0 {
		return nil
	}
	if err := b.maybeCommit(true); err != nil { // the marks, before they are read
		return err
	}
	err := b.w.View(func(s *store.Snapshot) error {
		return s.FilesPrefix("", func(p string, _ store.File) error {
			if v, _, ok := store.SplitFrame(p); ok && !b.vmeta.read[v] && s.VideoRead(v) < videoMetaVersion {
				return errUnread
			}
			return nil
		})
	})
	if errors.Is(err, errUnread) {
		return nil
	}
	if err != nil {
		return err
	}
	b.batch.SetVideoMetaVersion(videoMetaVersion)
	b.pending++
	return b.maybeCommit(true)
}
