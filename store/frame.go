package store

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// FrameTime writes a frame's time in seconds as a frame record's path
// carries it: the shortest decimal form with at most 3 decimals ("83.4",
// "0", "12.345").
func FrameTime(t float64) string {
	if t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
		t = 0
	}
	return strconv.FormatFloat(math.Round(t*1000)/1000, 'f', -1, 64)
}

// FramePath is the path of the frame record of video at t seconds:
// VIDEO#t=SECONDS.
func FramePath(video string, t float64) string { return video + FrameSep + FrameTime(t) }

// SplitFrame splits a frame record's path into its video's path and the
// frame's time; ok is false for a path that is no frame record (what
// follows the last FrameSep must be a time in FrameTime's form), such as
// a webdataset sample whose key holds "#t=5" (SHARD.tar#scene#t=5, or
// SHARD.tar#t=5): what precedes it is a shard or a sample, never a video.
func SplitFrame(path string) (video string, t float64, ok bool) {
	i := strings.LastIndex(path, FrameSep)
	if i <= 0 {
		return "", 0, false
	}
	s := path[i+len(FrameSep):]
	if s == "" || s[0] < '0' || s[0] > '9' {
		return "", 0, false
	}
	t, err := strconv.ParseFloat(s, 64)
	if err != nil || FrameTime(t) != s || NamesSample(path[:i]) {
		return "", 0, false
	}
	return path[:i], t, true
}

// VideoCounts counts the videos with frames and their frame records (a
// pass over the paths of the index, not its records).
func (s *Snapshot) VideoCounts() (videos, frames int) {
	last := ""
	c := s.tx.Bucket(bFiles).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if !bytes.Contains(k, frameSep) {
			continue
		}
		if v, _, ok := SplitFrame(string(k)); ok {
			frames++
			if v != last { // a video's frames are consecutive in path order
				videos++
				last = v
			}
		}
	}
	return videos, frames
}

var frameSep = []byte(FrameSep)
