package video

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Options (see there for the reasons).
const (
	DefaultInterval  = 10 * time.Second
	DefaultMinGap    = time.Second
	DefaultScene     = 0.3
	DefaultMaxFrames = 100
	DefaultShort     = 448
	DefaultMaxPixels = 100_000_000
	DefaultDupDiff   = 3.0
	DefaultKeyframe  = 2 * time.Second
)

// Options tune the sampling; the zero value of each field takes its
// default.
type Options struct {
	// Interval is the longest stretch without a frame (default 10 s: a
	// phone clip is mostly one continuous shot whose picture drifts
	// slowly; cuts are caught by the scene score, and 10 s keeps a static
	// shot to about six model runs a minute). For a long video it widens
	// to Duration/MaxFrames, so the frames span the whole of it.
	Interval time.Duration
	// MinGap is the shortest stretch between two frames (default 1 s); it
	// widens with Interval for a long video (Duration/MaxFrames), which
	// keeps a video to MaxFrames (+1) frames whatever its cuts.
	MinGap time.Duration
	// Scene is ffmpeg's scene-change score (0..1) above which a frame is
	// taken (default 0.3); negative takes none by score (Interval only).
	Scene float64
	// MaxFrames caps the frames of one video (default 100).
	MaxFrames int
	// Short is the shorter side of the frames returned, in pixels
	// (default 448, twice CLIP's 224 input, so that the model's own
	// resize does the last step as for a photo); a smaller picture is not
	// enlarged.
	Short int
	// MaxPixels refuses a picture over this many pixels (default 100
	// million, as for photos) before decoding it.
	MaxPixels int64
	// DupDiff drops a frame whose 16x16 thumbnail differs from the last
	// frame kept by less than this mean absolute difference (0..255 per
	// channel; default 3); negative keeps every frame.
	DupDiff float64
	// KeyframeMax is the longest keyframe spacing at which Sample decodes
	// keyframes only (default 2 s; negative always decodes every frame).
	// The spacing is read from the packet flags of the first 30 s, without
	// decoding. On the keyframe path the scene score compares consecutive
	// keyframes and the interval and gap rules count keyframe times, so a
	// cut is found at the first keyframe after it: at most KeyframeMax
	// late. Phones write a keyframe every 1 or 2 s; 2 s keeps that delay
	// to two of the 1 s minimum gap while skipping 29 of 30 decodes of a
	// 1 s GOP at 30 fps. Past it (streaming encodes: 4 to 10 s) a cut
	// would be found too late, and every frame is decoded.
	KeyframeMax time.Duration
	// TimeLimit bounds the decoding of one video (default 1 minute plus
	// twice its duration); ProbeLimit bounds ffprobe (default 30 s).
	TimeLimit, ProbeLimit time.Duration
}

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MinGap <= 0 {
		o.MinGap = DefaultMinGap
	}
	if o.Scene == 0 {
		o.Scene = DefaultScene
	}
	if o.MaxFrames <= 0 {
		o.MaxFrames = DefaultMaxFrames
	}
	if o.Short <= 0 {
		o.Short = DefaultShort
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.DupDiff == 0 {
		o.DupDiff = DefaultDupDiff
	}
	if o.KeyframeMax == 0 {
		o.KeyframeMax = DefaultKeyframe
	}
}

// Sampler probes videos and samples their frames with one set of tools
// and options. It is safe for concurrent use.
type Sampler struct {
	tools Tools
	opts  Options
}

// New returns a Sampler running tools with opts.
func New(tools *Tools, opts Options) *Sampler {
	opts.defaults()
	return &Sampler{tools: *tools, opts: opts}
}

// Options returns the options in use, defaults filled in.
func (s *Sampler) Options() Options { return s.opts }

// Tools returns the tools the Sampler runs.
func (s *Sampler) Tools() Tools { return s.tools }

// Frame is one sampled frame: packed RGB, Width x Height, at Time seconds
// from the start of the video as a player counts them.
type Frame struct {
	Time          float64
	Width, Height int
	RGB           []byte
}

// Image returns the frame as an image (opaque RGBA).
func (f Frame) Image() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, f.Width, f.Height))
	for i, j := 0, 0; i+2 < len(f.RGB); i, j = i+3, j+4 {
		img.Pix[j], img.Pix[j+1], img.Pix[j+2], img.Pix[j+3] = f.RGB[i], f.RGB[i+1], f.RGB[i+2], 255
	}
	return img
}

// FrameSize is the size of the frames Sample returns for a video of info:
// its display size with the shorter side brought down to short.
func FrameSize(info Info, short int) (w, h int) {
	w, h = info.DisplayWidth, info.DisplayHeight
	if s := min(w, h); s > short {
		f := float64(short) / float64(s)
		w, h = max(1, int(math.Round(float64(w)*f))), max(1, int(math.Round(float64(h)*f)))
	}
	return w, h
}

// Filter is the ffmpeg filter chain Sample runs after the decoder's own
// rotation: the selection (first frame, scene changes, the interval, the
// minimum gap), showinfo for each frame's time, and the scale to w x h
// with square pixels. Exported so tests (and users) can write the same
// frames as images with ffmpeg (with "-skip_frame nokey" before "-i" when
// info.KeyframesOnly).
func (s *Sampler) Filter(info Info) string {
	o := s.opts
	iv, gap := o.Interval.Seconds(), o.MinGap.Seconds()
	if info.Duration > 0 {
		spread := info.Duration / float64(o.MaxFrames)
		iv, gap = max(iv, spread), max(gap, spread)
	}
	cond := fmt.Sprintf("gte(t-prev_selected_t,%g)", iv)
	if o.Scene > 0 {
		cond = fmt.Sprintf("(gt(scene,%g)+%s)", o.Scene, cond)
	}
	w, h := FrameSize(info, o.Short)
	return fmt.Sprintf("select='isnan(prev_selected_t)+gte(t-prev_selected_t,%g)*%s',showinfo,scale=%d:%d:flags=area,setsar=1,format=rgb24",
		gap, cond, w, h)
}

// Sample probes path and returns its frames where the picture changes
// (see Options), near-identical neighbours dropped, with the video's Info.
// When the keyframes come at least every KeyframeMax only they are
// decoded (Info.KeyframesOnly), and the frames have their times.
// Errors wrap ErrNotVideo, ErrNoVideoStream, ErrTooLarge, ErrTimeLimit,
// ErrFFmpeg, or the context's error when ctx ends.
func (s *Sampler) Sample(ctx context.Context, path string) ([]Frame, Info, error) {
	info, err := s.Probe(ctx, path)
	if err != nil {
		return nil, info, err
	}
	if px := int64(info.Width) * int64(info.Height); px > s.opts.MaxPixels {
		return nil, info, fmt.Errorf("%w: %dx%d is %.0f megapixels, the limit is %.0f", ErrTooLarge,
			info.Width, info.Height, float64(px)/1e6, float64(s.opts.MaxPixels)/1e6)
	}
	if s.opts.KeyframeMax > 0 {
		info.KeyframeGap = s.keyframeGap(ctx, path)
		if err := ctx.Err(); err != nil {
			return nil, info, err
		}
		// 2 % over the limit still counts: 60 frames at 29.97 fps
		// are 2.002 s.
		info.KeyframesOnly = info.KeyframeGap > 0 && info.KeyframeGap <= 1.02*s.opts.KeyframeMax.Seconds()
	}
	frames, err := s.decode(ctx, path, info)
	if err != nil {
		return nil, info, err
	}
	return s.dropDuplicates(frames), info, nil
}

var ptsRE = regexp.MustCompile(`\bpts_time:\s*(-?[0-9.eE+-]+)`)

// decode runs ffmpeg with Filter (over keyframes only when
// info.KeyframesOnly) and reads the frames from its output and
// their times from showinfo's log lines.
func (s *Sampler) decode(ctx context.Context, path string, info Info) ([]Frame, error) {
	limit := s.opts.TimeLimit
	if limit <= 0 {
		limit = time.Minute + time.Duration(2*info.Duration*float64(time.Second))
	}
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	w, h := FrameSize(info, s.opts.Short)
	args := []string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "info"}
	if info.KeyframesOnly {
		args = append(args, "-skip_frame", "nokey")
	}
	args = append(args, "-i", path, "-map", "0:v:0", "-an", "-sn", "-dn", "-vf", s.Filter(info), "-vsync", "vfr",
		"-frames:v", strconv.Itoa(s.opts.MaxFrames+1), "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1")
	cmd := exec.CommandContext(dctx, s.tools.FFmpeg, args...)
	killGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFFmpeg, err)
	}
	var times []float64
	var tail []string // the last lines of the log that are not showinfo's
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "showinfo") {
				if m := ptsRE.FindStringSubmatch(line); m != nil {
					if t, err := strconv.ParseFloat(m[1], 64); err == nil {
						times = append(times, max(t, 0))
					}
				}
				continue
			}
			if tail = append(tail, line); len(tail) > 8 {
				tail = tail[1:]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var frames []Frame
	size := w * h * 3
	for len(frames) <= s.opts.MaxFrames {
		buf := make([]byte, size)
		if _, err := io.ReadFull(stdout, buf); err != nil {
			break
		}
		frames = append(frames, Frame{Width: w, Height: h, RGB: buf})
	}
	io.Copy(io.Discard, stdout)
	wg.Wait()
	werr := cmd.Wait()
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	if dctx.Err() != nil {
		return nil, fmt.Errorf("%w: ffmpeg still decoding after %s, stopped", ErrTimeLimit, limit.Round(time.Second))
	}
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) && !ee.Exited() {
			return nil, fmt.Errorf("%w: ffmpeg crashed (%v)", ErrFFmpeg, werr)
		}
		return nil, fmt.Errorf("%w: %s", ErrFFmpeg, lastLine(strings.Join(tail, "\n"), werr))
	}
	n := min(len(frames), len(times))
	if n == 0 {
		return nil, fmt.Errorf("%w: no frame could be decoded (%s)", ErrNotVideo, lastLine(strings.Join(tail, "\n"), errors.New("no output")))
	}
	for i := range n {
		frames[i].Time = times[i]
	}
	return frames[:min(n, s.opts.MaxFrames)], nil
}

// dropDuplicates drops each frame whose 16x16 thumbnail is within DupDiff
// of the last frame kept: a still shot sampled every Interval gives one
// frame, not one a step.
func (s *Sampler) dropDuplicates(frames []Frame) []Frame {
	if s.opts.DupDiff < 0 || len(frames) < 2 {
		return frames
	}
	out := frames[:1]
	last := thumb(frames[0])
	for _, f := range frames[1:] {
		t := thumb(f)
		if thumbDiff(t, last) < s.opts.DupDiff {
			continue
		}
		out, last = append(out, f), t
	}
	return out
}

const thumbSide = 16

// thumb averages a frame down to thumbSide x thumbSide RGB.
func thumb(f Frame) []float64 {
	var sum [thumbSide * thumbSide * 3]float64
	var cnt [thumbSide * thumbSide]float64
	for y := range f.Height {
		ty := y * thumbSide / f.Height
		row := f.RGB[y*f.Width*3 : (y+1)*f.Width*3]
		for x := range f.Width {
			k := ty*thumbSide + x*thumbSide/f.Width
			sum[3*k] += float64(row[3*x])
			sum[3*k+1] += float64(row[3*x+1])
			sum[3*k+2] += float64(row[3*x+2])
			cnt[k]++
		}
	}
	out := make([]float64, len(sum))
	for i := range out {
		if c := cnt[i/3]; c > 0 {
			out[i] = sum[i] / c
		}
	}
	return out
}

func thumbDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d += math.Abs(a[i] - b[i])
	}
	return d / float64(len(a))
}
