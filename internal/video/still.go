package video

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// StillLimit bounds the making of one still.
const StillLimit = 30 * time.Second

// Still returns the picture of the video at path at t seconds as PNG, as a
// player shows it (rotation and sample aspect applied), its longer side
// brought down to maxSide pixels (0 = full size).
func Still(ctx context.Context, tools *Tools, path string, t float64, maxSide int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, StillLimit)
	defer cancel()
	vf := "scale=trunc(iw*sar/2)*2:ih,setsar=1"
	if maxSide > 0 {
		m := strconv.Itoa(maxSide)
		vf += ",scale=w='min(" + m + ",iw)':h='min(" + m + ",ih)':force_original_aspect_ratio=decrease"
	}
	cmd := exec.CommandContext(ctx, tools.FFmpeg, "-nostdin", "-hide_banner", "-nostats", "-loglevel", "error",
		"-ss", strconv.FormatFloat(max(t, 0), 'f', 3, 64), "-i", path, "-map", "0:v:0", "-frames:v", "1",
		"-vf", vf, "-f", "image2pipe", "-c:v", "png", "pipe:1")
	killGroup(cmd)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: still of %s at %g s", ErrTimeLimit, path, t)
	}
	if err != nil || out.Len() == 0 {
		return nil, fmt.Errorf("%w: still of %s at %g s: %s", ErrFFmpeg, path, t, lastLine(stderr.String(), fmt.Errorf("no picture (%v)", err)))
	}
	return out.Bytes(), nil
}
