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
//   - Without a prober (no ffmpeg) nothing is read and the version stays:
//     a later build with ffprobe does the work. Nothing counts as failed.
//   - A video whose probe fails, or that changes under the probe, keeps
//     its metadata (it is not a failure: its frames are sound) and keeps
//     the version from being recorded, so that a later build tries again.
//   - A stopped build keeps the metadata it wrote; the version waits.
//   - The version is the index's, not a root's: only a complete build of
//     the roots (no Within, no share of a shared build) records it, and
//     only when no frame in the whole index belongs to a video it did not
//     read (one under a root it did not build, or on a disk that is away).
//     Until then partial builds refresh what they walk, and the next full
//     build probes those again: cheap, and simpler than a mark per video.

// videoMetaVersion is the version of what videoMeta reads: 1 the
// container's creation_time and size; 2 adds Apple's local creationdate
// and the ISO 6709 GPS position and its place.
const videoMetaVersion = 2

// videoMetaState is what a build knows of the upgrade.
type videoMetaState struct {
	stale  bool            // the index's version is older than videoMetaVersion, and there is a prober
	read   map[string]bool // videos whose frames this build gave this code's metadata
	missed bool            // a video walked could not be probed again
}

// prober is the build's VideoProber, nil without one.
func (b *builder) prober() VideoProber {
	p, _ := b.opts.Video.(VideoProber)
	return p
}

// noteVideoMeta records that the frames of video got this code's
// metadata (recordVideo, with a prober).
func (b *builder) noteVideoMeta(video string) {
	if b.prober() != nil {
		b.vmeta.read[video] = true
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
	if p == nil {
		return nil
	}
	var todo []staleVideo
	err := b.w.View(func(s *store.Snapshot) error {
		v, err := s.VideoMetaVersion()
		if err != nil || v >= videoMetaVersion {
			return err
		}
		b.vmeta.stale = true
		for _, f := range wk.files {
			frames := b.frames[f.path]
			if len(frames) == 0 || b.vmeta.read[f.path] || b.videoChanged(f, nil) {
				continue // no frames, or read (or left) by this build's pass
			}
			sv := staleVideo{f: f, frames: frames, metas: map[string]store.Meta{}}
			for _, fr := range frames {
				m, ok, err := s.Meta(fr.path)
				if err != nil {
					return err
				}
				if ok {
					sv.metas[fr.path] = m
				}
			}
			todo = append(todo, sv)
		}
		return nil
	})
	if err != nil || len(todo) == 0 {
		return err
	}
	read := func(sv staleVideo) *store.Meta { return b.reprobe(ctx, p, sv.f) }
	return metaPass(ctx, b, todo, read, func(sv staleVideo, m *store.Meta) string {
		if m == nil { // not probed
			b.vmeta.missed = true
			return sv.f.path
		}
		for _, fr := range sv.frames {
			if old, ok := sv.metas[fr.path]; !ok || old != *m {
				b.batch.PutMeta(fr.path, *m)
				b.pending++
			}
		}
		b.vmeta.read[sv.f.path] = true
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

// errUnread stops settleVideoMeta's walk at a video this build did not
// read.
var errUnread = errors.New("a video not read by this build")

// settleVideoMeta records videoMetaVersion at the end of a complete build
// (after its removals) when the upgrade is done: a full build of the
// roots, every video probed, and every frame of the index from a video
// this build read.
func (b *builder) settleVideoMeta() error {
	if !b.vmeta.stale || b.vmeta.missed || len(b.opts.Within) > 0 || b.opts.Shards > 1 {
		return nil
	}
	err := b.w.View(func(s *store.Snapshot) error {
		return s.FilesPrefix("", func(p string, _ store.File) error {
			if v, _, ok := store.SplitFrame(p); ok && !b.vmeta.read[v] {
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
