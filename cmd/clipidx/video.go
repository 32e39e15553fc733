package main

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/spf13/pflag"
)

// videoFlags are build's video options.
type videoFlags struct {
	ffmpeg    string
	interval  time.Duration
	frames    int
	scene     float64
	timeLimit time.Duration
	keyframes time.Duration // video.Options.KeyframeMax; < 0 decodes every frame
}

func (v *videoFlags) register(f *pflag.FlagSet) {
	f.StringVar(&v.ffmpeg, "ffmpeg", envOr("CLIPIDX_FFMPEG", ""), "folder holding ffprobe and ffmpeg, which read videos and decode HEICs (default: found on PATH) [env CLIPIDX_FFMPEG]")
	v.registerSampling(f)
}

// registerSampling registers the sampling flags without --ffmpeg (serve
// has its own, which its watcher shares).
func (v *videoFlags) registerSampling(f *pflag.FlagSet) {
	f.DurationVar(&v.interval, "video-interval", video.DefaultInterval, "longest stretch of a video without a sampled frame (widened to duration/--video-frames for long videos)")
	f.IntVar(&v.frames, "video-frames", video.DefaultMaxFrames, "most frames sampled from one video")
	f.Float64Var(&v.scene, "video-scene", video.DefaultScene, "ffmpeg scene-change score (0..1) above which a frame is sampled; 0 samples by --video-interval alone")
	f.DurationVar(&v.keyframes, "video-keyframes", video.DefaultKeyframe, "decode only the keyframes of a video whose keyframes come at least this often (phones: every 1-2 s), scoring scene changes between them; 0 decodes every frame")
	f.DurationVar(&v.timeLimit, "video-timeout", 0, "time limit for decoding one video (0 = 1 minute plus twice its duration)")
}

// sampler finds ffmpeg and returns the index options for videos; without
// ffmpeg it returns nil (videos are skipped) and why.
func (v *videoFlags) sampler(proc *preprocess.Processor) (index.VideoSampler, func(image.Image) ([]float32, error), error) {
	if v.frames < 1 || v.interval < 0 || v.timeLimit < 0 || v.keyframes < 0 || v.scene < 0 || v.scene > 1 {
		return nil, nil, usageError("--video-frames takes a count ≥ 1, --video-scene a score in [0, 1], --video-interval, --video-keyframes and --video-timeout a duration ≥ 0")
	}
	tools, err := video.Find(v.ffmpeg)
	if err != nil {
		if errors.Is(err, video.ErrOldFFmpeg) || v.ffmpeg != "" {
			return nil, nil, err // asked for, or present and unusable: say so, do not skip quietly
		}
		return nil, nil, nil
	}
	scene := v.scene
	if scene == 0 {
		scene = -1 // none by score
	}
	keyframes := v.keyframes
	if keyframes == 0 {
		keyframes = -1 // every frame
	}
	s := video.New(tools, video.Options{Interval: v.interval, MaxFrames: v.frames, Scene: scene, TimeLimit: v.timeLimit, KeyframeMax: keyframes})
	pre := func(img image.Image) ([]float32, error) {
		px := proc.Image(img)
		if px == nil {
			return nil, fmt.Errorf("%w: frame of %v could not be preprocessed", preprocess.ErrCorrupt, img.Bounds().Size())
		}
		return px, nil
	}
	return s, pre, nil
}

// printVideoNotes says once how many video frames were written, how many
// Live Photo movies were left out, and how many videos were skipped for
// want of ffmpeg and what to do.
func printVideoNotes(w io.Writer, s *index.Summary) {
	if s.Frames > 0 {
		fmt.Fprintf(w, "video frames written: %d\n", s.Frames)
	}
	if n := s.LiveVideos; n > 0 {
		fmt.Fprintf(w, "Live Photos: %d %s left out, %s indexed (`clipidx status` counts them)\n",
			n, plural(n, "movie", "movies"), plural(n, "its still is", "their stills are"))
	}
	if n := s.VideosSkipped; n > 0 {
		fmt.Fprintf(w, "skipped %d %s: ffmpeg and ffprobe (%s or newer) were not found on PATH. Install them "+
			"(Debian/Ubuntu: apt install ffmpeg; macOS: brew install ffmpeg; Windows: winget install ffmpeg) "+
			"or give --ffmpeg DIR, then build again: the videos are picked up then\n",
			n, plural(n, "video", "videos"), video.MinVersion)
	}
}

// printFFmpegFailures says how many HEICs ffmpeg was given and did not
// decode in this process (the built-in decoder read them, at its speed).
func printFFmpegFailures(w io.Writer) {
	if n, err := preprocess.FFmpegFailures(); n > 0 {
		fmt.Fprintf(w, "note: ffmpeg did not decode %d %s (the last: %v); the built-in decoder read %s, at its speed. "+
			"`clipidx info` checks the ffmpeg found; CLIPIDX_HEVC=builtin stops trying it\n",
			n, plural(int(n), "HEIC", "HEICs"), err, plural(int(n), "it", "them"))
	}
}

// frameStill returns serve's maker of video frame pictures, or nil when
// ffmpeg is not found (frames then have no thumbnail; videos still play).
func frameStill(dir string) func(ctx context.Context, path string, t float64) ([]byte, error) {
	tools, err := video.Find(dir)
	if err != nil {
		return nil
	}
	return func(ctx context.Context, path string, t float64) ([]byte, error) {
		return video.Still(ctx, tools, path, t, 1280)
	}
}
