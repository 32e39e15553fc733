package video

import (
	"bytes"
	"context"
	"math"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// keyframeWindow is how much of a video keyframeGap reads: the packets
// (not the pictures) of its first 30 seconds, enough to see a phone's
// GOP many times over, for a few milliseconds of demuxing.
const keyframeWindow = 30

// keyframeGap returns the longest spacing between keyframes, in seconds,
// over the first keyframeWindow seconds of path's first video stream,
// read from ffprobe's packet flags without decoding anything. The stretch
// from the last keyframe to the last packet read counts as a spacing too,
// so a single keyframe followed by a long stretch gives a long one. It
// returns 0 when the spacing could not be read (no packets, ffprobe
// failed or ran past the probe limit).
func (s *Sampler) keyframeGap(ctx context.Context, path string) float64 {
	limit := s.opts.ProbeLimit
	if limit <= 0 {
		limit = 30 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(pctx, s.tools.FFprobe, "-v", "error", "-select_streams", "v:0",
		"-read_intervals", "%+"+strconv.Itoa(keyframeWindow),
		"-show_entries", "packet=pts_time,flags", "-of", "csv=p=0", "--", path)
	killGroup(cmd)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return 0
	}
	return parseKeyframeGap(stdout.String())
}

// parseKeyframeGap reads ffprobe's "pts_time,flags" packet lines (in
// decoding order, so the times of frames that are not keyframes may go
// back and forth) and returns the longest keyframe spacing, 0 when there
// is no keyframe with a time.
func parseKeyframeGap(out string) float64 {
	var keys []float64
	last := math.Inf(-1)
	for line := range strings.Lines(out) {
		ts, flags, ok := strings.Cut(strings.TrimSpace(line), ",")
		if !ok {
			continue
		}
		t, err := strconv.ParseFloat(ts, 64)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			continue
		}
		last = max(last, t)
		if strings.Contains(flags, "K") {
			keys = append(keys, t)
		}
	}
	if len(keys) == 0 {
		return 0
	}
	sort.Float64s(keys)
	gap := last - keys[len(keys)-1]
	for i := 1; i < len(keys); i++ {
		gap = max(gap, keys[i]-keys[i-1])
	}
	return gap
}
