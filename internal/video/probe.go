package video

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrNotVideo is returned for a file ffprobe cannot read as a media
	// file (truncated, corrupt, or not a video at all).
	ErrNotVideo = errors.New("not a readable video")
	// ErrNoVideoStream is returned for a media file without a picture
	// (audio only, or only a cover image).
	ErrNoVideoStream = errors.New("no video stream (audio only?)")
	// ErrTooLarge is returned for a video whose picture is over the pixel
	// limit (Options.MaxPixels), before anything is decoded.
	ErrTooLarge = errors.New("video picture too large")
	// ErrTimeLimit is returned when ffprobe or ffmpeg ran past the time
	// limit for one video and was stopped.
	ErrTimeLimit = errors.New("time limit reached")
	// ErrFFmpeg is returned when ffmpeg failed or crashed on the file.
	ErrFFmpeg = errors.New("ffmpeg failed")
)

// Info is what a probe tells of a video.
type Info struct {
	Format   string  // container, as ffprobe names it ("mov,mp4,m4a,3gp,3g2,mj2")
	Codec    string  // video codec ("h264")
	Duration float64 // seconds; 0 when unknown
	// Width and Height are the coded size of the picture.
	Width, Height int
	// SARNum/SARDen is the sample (pixel) aspect ratio (1/1 for square
	// pixels, and when the file says nothing).
	SARNum, SARDen int
	// Rotation is the clockwise rotation in degrees (0, 90, 180, 270) a
	// player applies, from the display matrix or the rotate tag; the
	// sampled frames have it applied.
	Rotation int
	// DisplayWidth and DisplayHeight are the size a player shows: the
	// sample aspect and the rotation applied.
	DisplayWidth, DisplayHeight int
	// KeyframeGap is the longest keyframe spacing in seconds over the
	// first 30 s, read by Sample from the packet flags (0 when not read:
	// Probe alone, KeyframeMax negative, or unreadable), and
	// KeyframesOnly tells that Sample decoded keyframes only, the gap
	// being within Options.KeyframeMax.
	KeyframeGap   float64
	KeyframesOnly bool
	// Created is the container's creation time (format tag creation_time,
	// UTC), zero when absent or unreadable.
	Created time.Time
}

// probeJSON is the part of ffprobe's JSON that Probe reads.
type probeJSON struct {
	Streams []struct {
		CodecType   string            `json:"codec_type"`
		CodecName   string            `json:"codec_name"`
		Width       int               `json:"width"`
		Height      int               `json:"height"`
		SAR         string            `json:"sample_aspect_ratio"`
		Duration    string            `json:"duration"`
		Tags        map[string]string `json:"tags"`
		Disposition map[string]int    `json:"disposition"`
		SideData    []struct {
			Rotation *float64 `json:"rotation"`
		} `json:"side_data_list"`
	} `json:"streams"`
	Format struct {
		FormatName string            `json:"format_name"`
		Duration   string            `json:"duration"`
		Tags       map[string]string `json:"tags"`
	} `json:"format"`
}

// Probe runs ffprobe on path. Errors wrap ErrNotVideo, ErrNoVideoStream,
// ErrTimeLimit or the context's error.
func (s *Sampler) Probe(ctx context.Context, path string) (Info, error) {
	o := s.opts
	limit := o.ProbeLimit
	if limit <= 0 {
		limit = 30 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(pctx, s.tools.FFprobe, "-v", "error", "-print_format", "json",
		"-show_format", "-show_streams", "--", path)
	killGroup(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return Info{}, cerr
		}
		if pctx.Err() != nil {
			return Info{}, fmt.Errorf("%w: ffprobe ran for %s", ErrTimeLimit, limit)
		}
		// ffprobe starts its line with the path, which the caller names.
		return Info{}, fmt.Errorf("%w: %s", ErrNotVideo, strings.TrimPrefix(lastLine(stderr.String(), err), path+": "))
	}
	return parseProbe(stdout.Bytes())
}

// parseProbe reads ffprobe's JSON: the first video stream that is not an
// attached picture (cover art) is the picture.
func parseProbe(data []byte) (Info, error) {
	var p probeJSON
	if err := json.Unmarshal(data, &p); err != nil {
		return Info{}, fmt.Errorf("%w: ffprobe output: %v", ErrNotVideo, err)
	}
	var in Info
	in.Format = p.Format.FormatName
	in.Duration = parseSeconds(p.Format.Duration)
	if t, err := time.Parse(time.RFC3339Nano, p.Format.Tags["creation_time"]); err == nil && t.Unix() > 0 {
		in.Created = t.UTC()
	}
	for _, st := range p.Streams {
		if st.CodecType != "video" || st.Disposition["attached_pic"] == 1 || st.Width <= 0 || st.Height <= 0 {
			continue
		}
		in.Codec, in.Width, in.Height = st.CodecName, st.Width, st.Height
		if in.Duration == 0 {
			in.Duration = parseSeconds(st.Duration)
		}
		in.SARNum, in.SARDen = 1, 1
		if n, d, ok := strings.Cut(st.SAR, ":"); ok {
			a, e1 := strconv.Atoi(n)
			b, e2 := strconv.Atoi(d)
			if e1 == nil && e2 == nil && a > 0 && b > 0 {
				in.SARNum, in.SARDen = a, b
			}
		}
		// A display matrix's rotation is counter-clockwise; the old
		// rotate tag is clockwise.
		rot := 0.0
		if r, err := strconv.ParseFloat(st.Tags["rotate"], 64); err == nil {
			rot = r
		}
		for _, sd := range st.SideData {
			if sd.Rotation != nil {
				rot = -*sd.Rotation
			}
		}
		in.Rotation = ((int(math.Round(rot/90))%4 + 4) % 4) * 90
		in.DisplayWidth, in.DisplayHeight = displaySize(in)
		return in, nil
	}
	return Info{}, ErrNoVideoStream
}

// displaySize applies the sample aspect (widening or narrowing the
// picture, never changing its height) and the rotation.
func displaySize(in Info) (w, h int) {
	w = max(1, int(math.Round(float64(in.Width)*float64(in.SARNum)/float64(in.SARDen))))
	h = in.Height
	if in.Rotation == 90 || in.Rotation == 270 {
		w, h = h, w
	}
	return w, h
}

func parseSeconds(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}

// lastLine is the last non-empty line of a tool's error output, or err.
func lastLine(stderr string, err error) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return err.Error()
}
