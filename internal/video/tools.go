// Package video samples frames from video files through ffprobe and
// ffmpeg, run as child processes (no cgo): it finds the tools and checks
// their version, probes a file (size, rotation, sample aspect, duration,
// creation time), and decodes the frames where the picture changes into
// small packed RGB images at the size and orientation a player shows.
// It is a leaf: it imports no other clipidx package, prints nothing and
// never exits.
package video

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"time"
)

// MinVersion is the oldest ffmpeg release this package supports (Debian
// 11's; the filters and ffprobe fields it uses are all older). Find
// refuses an older one.
const MinVersion = "4.4"

var (
	// ErrNoFFmpeg is returned by Find when ffprobe or ffmpeg is missing.
	ErrNoFFmpeg = errors.New("ffmpeg not found")
	// ErrOldFFmpeg is returned by Find for an ffmpeg older than MinVersion.
	ErrOldFFmpeg = errors.New("ffmpeg too old")
)

// Tools are the ffprobe and ffmpeg programs a Sampler runs.
type Tools struct {
	FFprobe, FFmpeg string
	Version         string // as `ffmpeg -version` names it ("5.1.6-0+deb12u1")
}

// Find locates ffprobe and ffmpeg in dir, or on PATH when dir is "", and
// checks that ffmpeg is at least MinVersion (a build from git, which
// names no release, is taken as recent).
func Find(dir string) (*Tools, error) {
	var t Tools
	for _, p := range []struct {
		name string
		dst  *string
	}{{"ffprobe", &t.FFprobe}, {"ffmpeg", &t.FFmpeg}} {
		exe := p.name
		if runtime.GOOS == "windows" {
			exe += ".exe"
		}
		var err error
		if dir != "" {
			*p.dst = filepath.Join(dir, exe)
			var st os.FileInfo
			if st, err = os.Stat(*p.dst); err == nil && st.IsDir() {
				err = errors.New("is a folder")
			}
		} else {
			*p.dst, err = exec.LookPath(exe)
		}
		if err != nil {
			where := "on PATH"
			if dir != "" {
				where = "in " + dir
			}
			return nil, fmt.Errorf("%w: no %s %s (%v)", ErrNoFFmpeg, p.name, where, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, t.FFmpeg, "-hide_banner", "-version").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s -version: %v", ErrNoFFmpeg, t.FFmpeg, err)
	}
	t.Version, err = checkVersion(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.FFmpeg, err)
	}
	return &t, nil
}

var versionRE = regexp.MustCompile(`(?m)^ffmpeg version (\S+)`)
var releaseRE = regexp.MustCompile(`^n?(\d+)\.(\d+)`)

// checkVersion reads the first line of `ffmpeg -version` and refuses a
// release older than MinVersion.
func checkVersion(out string) (string, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%w: `ffmpeg -version` names no version", ErrNoFFmpeg)
	}
	v := m[1]
	r := releaseRE.FindStringSubmatch(v)
	if r == nil {
		return v, nil // a git build ("N-113000-g...") names no release
	}
	major, _ := strconv.Atoi(r[1])
	minor, _ := strconv.Atoi(r[2])
	minM, minN := 4, 4
	if major < minM || major == minM && minor < minN {
		return v, fmt.Errorf("%w: version %s, clipidx needs %s or newer", ErrOldFFmpeg, v, MinVersion)
	}
	return v, nil
}
