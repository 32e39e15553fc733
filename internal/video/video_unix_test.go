//go:build unix

package video_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
)

// fakeFFmpeg writes a folder whose ffprobe is the real one and whose
// ffmpeg runs script for anything but -version.
func fakeFFmpeg(t *testing.T, real *video.Tools, script string) *video.Tools {
	dir := t.TempDir()
	probe := "#!/bin/sh\nexec " + real.FFprobe + " \"$@\"\n"
	mpeg := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -version ] && exec " + real.FFmpeg + " \"$@\"; done\n" + script
	for name, body := range map[string]string{"ffprobe": probe, "ffmpeg": mpeg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tools, err := video.Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestSampleHangAndCrash: an ffmpeg that hangs is stopped at the time
// limit, with its children (the process group); one that crashes is
// named.
func TestSampleHangAndCrash(t *testing.T) {
	real := videotest.Tools(t)
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the fake ffmpeg")
	}
	good := filepath.Join(t.TempDir(), "good.mp4")
	videotest.Bars(t, real, good, "320x240", 1)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	hang := fakeFFmpeg(t, real, "sleep 600 &\necho $! > "+pidFile+"\nwait\n")
	_, _, err := video.New(hang, video.Options{TimeLimit: time.Second}).Sample(context.Background(), good)
	if !errors.Is(err, video.ErrTimeLimit) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hanging ffmpeg: %v, want ErrTimeLimit (and not a context deadline, which a build takes as not the file's)", err)
	}
	if b, rerr := os.ReadFile(pidFile); rerr == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		// A killed process may take a moment to be torn down (its
		// state R, then Z) after Sample returns; one still there after
		// 5 s was not killed.
		for end := time.Now().Add(5 * time.Second); pid > 0 && alive(pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if pid > 0 && alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the hanging ffmpeg's child %d outlived the time limit", pid)
		}
	}
	crash := fakeFFmpeg(t, real, "kill -SEGV $$\n")
	_, _, err = video.New(crash, video.Options{}).Sample(context.Background(), good)
	if !errors.Is(err, video.ErrFFmpeg) || !strings.Contains(err.Error(), "crashed") {
		t.Errorf("crashing ffmpeg: %v, want ErrFFmpeg saying it crashed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, _, err = video.New(hang, video.Options{}).Sample(ctx, good)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// alive reports whether process pid runs (a zombie waiting for its
// parent to reap it has been killed).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: the signal test is all there is
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
