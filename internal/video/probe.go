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
	// Taken is the camera's wall clock from Apple's
	// com.apple.quicktime.creationdate, in the UTC location (a wall clock,
	// not an instant, as preprocess.Meta.Taken), zero when absent or
	// unreadable; Offset is its offset from UTC in minutes east, when
	// HasOffset.
	Taken     time.Time
	Offset    int
	HasOffset bool
	// Created is the container's creation time (tag creation_time): an
	// instant, UTC by the QuickTime spec, the camera's zone unknown; zero
	// when absent or unreadable.
	Created time.Time
	// GPS position from the ISO 6709 location tag (Apple's
	// com.apple.quicktime.location.ISO6709, else location, as ffmpeg reads
	// an Android ©xyz atom), WGS84 degrees; the altitude in metres when
	// HasAlt.
	HasGPS   bool
	Lat, Lon float64
	HasAlt   bool
	Alt      float64
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
	readTags(&p, &in)
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

// Tags read for a video's date and place.
const (
	tagAppleDate     = "com.apple.quicktime.creationdate"     // local time with its offset
	tagCreationTime  = "creation_time"                        // UTC
	tagAppleLocation = "com.apple.quicktime.location.ISO6709" // ISO 6709
	tagLocation      = "location"                             // ISO 6709, from ©xyz
)

// readTags sets the date and GPS position of in from the tags; the first
// value that parses wins, Apple's tags before the generic ones.
func readTags(p *probeJSON, in *Info) {
	for _, v := range p.tags(tagAppleDate) {
		if wall, off, hasOff, ok := appleDate(v); ok {
			in.Taken, in.Offset, in.HasOffset = wall, off, hasOff
			break
		}
	}
	for _, v := range p.tags(tagCreationTime) {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && t.Unix() > 0 {
			in.Created = t.UTC()
			break
		}
	}
	for _, v := range append(p.tags(tagAppleLocation), p.tags(tagLocation)...) {
		if lat, lon, hasAlt, alt, ok := iso6709(v); ok {
			in.HasGPS, in.Lat, in.Lon, in.HasAlt, in.Alt = true, lat, lon, hasAlt, alt
			break
		}
	}
}

// tags returns the values of key, in any case: the format's, then each
// stream's (a file whose container has none may keep them on its tracks).
func (p *probeJSON) tags(key string) []string {
	var out []string
	add := func(tags map[string]string) {
		for k, v := range tags {
			if v = strings.TrimSpace(v); v != "" && strings.EqualFold(k, key) {
				out = append(out, v)
			}
		}
	}
	add(p.Format.Tags)
	for _, st := range p.Streams {
		add(st.Tags)
	}
	return out
}

// appleDate parses com.apple.quicktime.creationdate, the camera's local
// time with its offset ("2022-12-31T20:30:00-0500"; "-05:00", "Z",
// fractional seconds and no offset are read too): the wall clock in the
// UTC location, and the offset in minutes east of UTC when hasOff.
func appleDate(s string) (wall time.Time, off int, hasOff, ok bool) {
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	for i, layout := range []string{"2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"} {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		_, sec := t.Zone()
		if sec%60 != 0 || sec > 18*3600 || sec < -18*3600 || t.Unix() <= 0 {
			return time.Time{}, 0, false, false
		}
		wall = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		return wall, sec / 60, i < 2, true
	}
	return time.Time{}, 0, false, false
}

// iso6709 parses an ISO 6709 point as phones and cameras write it:
// latitude, longitude and an optional altitude in metres, each with its
// sign, then an optional CRS and "/" ("+40.7128-074.0060+010.000/").
// Degrees are decimal (what phones write) or in the ±DDMM.M and
// ±DDMMSS.S forms, told apart by the count of integer digits. ok is false
// for anything else and for a point out of range; 0,0 is a point, as it
// is for a photo's EXIF GPS.
func iso6709(s string) (lat, lon float64, hasAlt bool, alt float64, ok bool) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "/")
	if i := strings.Index(s, "CRS"); i >= 0 {
		s = s[:i]
	}
	var parts []string
	for s != "" {
		if s[0] != '+' && s[0] != '-' {
			return 0, 0, false, 0, false
		}
		j := 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		parts, s = append(parts, s[:j]), s[j:]
	}
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, false, 0, false
	}
	lat, ok1 := isoAngle(parts[0], 2, 90)
	lon, ok2 := isoAngle(parts[1], 3, 180)
	if !ok1 || !ok2 {
		return 0, 0, false, 0, false
	}
	if len(parts) == 3 {
		a, err := strconv.ParseFloat(parts[2], 64)
		if err != nil {
			return 0, 0, false, 0, false
		}
		hasAlt, alt = true, a
	}
	return lat, lon, hasAlt, alt, true
}

// isoAngle reads one signed ISO 6709 angle whose degrees take width
// digits (2 for a latitude, 3 for a longitude), within ±limit.
func isoAngle(s string, width int, limit float64) (float64, bool) {
	ip, _, _ := strings.Cut(s[1:], ".")
	v, err := strconv.ParseFloat(s[1:], 64)
	if ip == "" || err != nil {
		return 0, false
	}
	var deg float64
	switch n := len(ip); {
	case n <= width: // ±DD.D, ±DDD.D
		deg = v
	case n == width+2: // ±DDMM.M
		d := math.Floor(v / 100)
		m := v - d*100
		if m >= 60 {
			return 0, false
		}
		deg = d + m/60
	case n == width+4: // ±DDMMSS.S
		d := math.Floor(v / 10000)
		m := math.Floor((v - d*10000) / 100)
		sec := v - d*10000 - m*100
		if m >= 60 || sec >= 60 {
			return 0, false
		}
		deg = d + m/60 + sec/3600
	default:
		return 0, false
	}
	if deg > limit {
		return 0, false
	}
	if s[0] == '-' {
		deg = -deg
	}
	return deg, true
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
