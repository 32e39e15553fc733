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
// beside it, and the CPU time of ffmpeg and ffprobe (cpu-s/op, where the
// system reports it). The same content is encoded twice: x264's default
// keyframe spacing (250 frames, over 8 s: every frame decoded) and a
// phone's (-g 30, one a second: keyframes only, and for reference every
// frame of it decoded).
func BenchmarkSample1080p(b *testing.B) {
	tools := videotest.Tools(b)
	dir := b.TempDir()
	encode := func(name string, extra ...string) string {
		clip := filepath.Join(dir, name)
		args := []string{
			"-f", "lavfi", "-i", "testsrc2=s=1920x1080:r=30:d=20",
			"-f", "lavfi", "-i", "smptehdbars=s=1920x1080:r=30:d=20",
			"-f", "lavfi", "-i", "testsrc=s=1920x1080:r=30:d=20",
			"-filter_complex", "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]", "-map", "[v]",
			"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"}
		videotest.FFmpeg(b, tools, append(append(args, extra...), clip)...)
		return clip
	}
	long, short := encode("minute.mp4"), encode("minute-gop30.mp4", "-g", "30")
	for _, c := range []struct {
		name, clip string
		opts       video.Options
		keyframes  bool
	}{
		{"gop250", long, video.Options{}, false},
		{"gop30-keyframes", short, video.Options{}, true},
		{"gop30-full", short, video.Options{KeyframeMax: -1}, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := video.New(tools, c.opts)
			frames := 0
			cpu0 := childCPU()
			b.ResetTimer()
			for range b.N {
				fs, info, err := s.Sample(context.Background(), c.clip)
				if err != nil {
					b.Fatal(err)
				}
				if info.KeyframesOnly != c.keyframes {
					b.Fatalf("keyframes only %v (gap %g s), want %v", info.KeyframesOnly, info.KeyframeGap, c.keyframes)
				}
				frames = len(fs)
			}
			b.StopTimer()
			b.ReportMetric(float64(frames), "frames/op")
			if cpu := childCPU(); cpu > 0 {
				b.ReportMetric((cpu-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			}
		})
	}
}
