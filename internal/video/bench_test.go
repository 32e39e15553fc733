package video_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// BenchmarkSample1080p samples a one-minute 1080p H.264 clip of three
// 20-second scenes (moving test pattern, HD colour bars, a second moving
// pattern) at the default options: the decode-and-sample cost of a minute
// of video, with the frames it yields (frames/op) for the model's cost
// beside it.
func BenchmarkSample1080p(b *testing.B) {
	tools := videotest.Tools(b)
	clip := filepath.Join(b.TempDir(), "minute.mp4")
	videotest.FFmpeg(b, tools,
		"-f", "lavfi", "-i", "testsrc2=s=1920x1080:r=30:d=20",
		"-f", "lavfi", "-i", "smptehdbars=s=1920x1080:r=30:d=20",
		"-f", "lavfi", "-i", "testsrc=s=1920x1080:r=30:d=20",
		"-filter_complex", "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]", "-map", "[v]",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", clip)
	s := video.New(tools, video.Options{})
	frames := 0
	b.ResetTimer()
	for range b.N {
		fs, _, err := s.Sample(context.Background(), clip)
		if err != nil {
			b.Fatal(err)
		}
		frames = len(fs)
	}
	b.ReportMetric(float64(frames), "frames/op")
}
