package video

import (
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write testdata/probe again with ffmpeg, ffprobe and exiftool")

// probeClips are the recipes of testdata/probe/NAME.json: each is the
// output of `ffprobe -v quiet -print_format json -show_format
// -show_streams NAME` on a clip these commands make.
var probeClips = map[string][][]string{
	// An iPhone clip: UTC creation_time, Apple's local date and place.
	"nye.mov": {{"ffmpeg", "-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=10", "-c:v", "libx264",
		"-movflags", "use_metadata_tags", "-metadata", "creation_time=2023-01-01T01:30:00Z",
		"-metadata", "com.apple.quicktime.creationdate=2022-12-31T20:30:00-0500",
		"-metadata", "com.apple.quicktime.location.ISO6709=+40.7128-074.0060/", "nye.mov"}},
	// An Android clip: UTC creation_time and a ©xyz location.
	"android.mp4": {{"ffmpeg", "-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=10", "-c:v", "libx264",
		"-metadata", "creation_time=2023-06-01T12:00:00Z", "-metadata", "location=+48.8566+002.3522/", "android.mp4"}},
	// A creation time on the track only (the movie's is 0).
	"track.mp4": {
		{"ffmpeg", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120:rate=10", "-c:v", "libx264",
			"-metadata", "creation_time=2021-05-02T03:04:05Z", "track.mp4"},
		{"exiftool", "-q", "-overwrite_original", "-QuickTime:CreateDate=1904:01:01 00:00:00", "track.mp4"},
	},
	// A location with altitude on the stream only, its tag in capitals.
	"stream.mkv": {{"ffmpeg", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120:rate=10", "-c:v", "libx264",
		"-map_metadata", "-1", "-metadata:s:v:0", "location=+35.6762+139.6503+040.000/", "stream.mkv"}},
}

func writeProbeFixtures(t *testing.T) {
	dir := t.TempDir()
	for name, cmds := range probeClips {
		for _, c := range cmds {
			if c[0] == "ffmpeg" {
				c = append([]string{"ffmpeg", "-nostdin", "-loglevel", "error", "-y"}, c[1:]...)
			}
			cmd := exec.Command(c[0], c[1:]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
		}
		cmd := exec.Command("ffprobe", "-v", "quiet", "-print_format", "json", "-show_format", "-show_streams", name)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ffprobe %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "probe", name+".json"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParseProbeMeta: the date and place of real ffprobe output. Apple's
// local creationdate is the wall clock with its offset, creation_time the
// UTC instant; the location is read from Apple's tag or ©xyz, from the
// format's tags or else a stream's.
func TestParseProbeMeta(t *testing.T) {
	if *update {
		writeProbeFixtures(t)
	}
	tests := []struct {
		name          string
		taken         time.Time // wall clock
		offset        int
		hasOffset     bool
		created       time.Time
		hasGPS        bool
		lat, lon, alt float64
		hasAlt        bool
	}{
		{name: "nye.mov", taken: time.Date(2022, 12, 31, 20, 30, 0, 0, time.UTC), offset: -300, hasOffset: true,
			created: time.Date(2023, 1, 1, 1, 30, 0, 0, time.UTC), hasGPS: true, lat: 40.7128, lon: -74.006},
		{name: "android.mp4", created: time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC), hasGPS: true, lat: 48.8566, lon: 2.3522},
		{name: "track.mp4", created: time.Date(2021, 5, 2, 3, 4, 5, 0, time.UTC)},
		{name: "stream.mkv", hasGPS: true, lat: 35.6762, lon: 139.6503, hasAlt: true, alt: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "probe", tt.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			in, err := parseProbe(data)
			if err != nil {
				t.Fatal(err)
			}
			if !in.Taken.Equal(tt.taken) || in.Offset != tt.offset || in.HasOffset != tt.hasOffset || !in.Created.Equal(tt.created) {
				t.Errorf("taken %v offset %d (%v), created %v; want %v offset %d (%v), created %v",
					in.Taken, in.Offset, in.HasOffset, in.Created, tt.taken, tt.offset, tt.hasOffset, tt.created)
			}
			if in.HasGPS != tt.hasGPS || !near(in.Lat, tt.lat) || !near(in.Lon, tt.lon) || in.HasAlt != tt.hasAlt || !near(in.Alt, tt.alt) {
				t.Errorf("gps %v %g,%g alt %v %g; want %v %g,%g alt %v %g",
					in.HasGPS, in.Lat, in.Lon, in.HasAlt, in.Alt, tt.hasGPS, tt.lat, tt.lon, tt.hasAlt, tt.alt)
			}
			if in.Width != 160 || in.Height != 120 {
				t.Errorf("size %dx%d, want 160x120", in.Width, in.Height)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestISO6709(t *testing.T) {
	tests := []struct {
		in            string
		ok            bool
		lat, lon, alt float64
		hasAlt        bool
	}{
		{"+40.7128-074.0060/", true, 40.7128, -74.006, 0, false},
		{"+40.7128-074.0060+010.000/", true, 40.7128, -74.006, 10, true},
		{"-33.8908+151.2743-002.5/", true, -33.8908, 151.2743, -2.5, true},
		{"+48.8566+2.3522/", true, 48.8566, 2.3522, 0, false},                                 // longitude unpadded
		{"+40.7128-074.0060+010.000CRSWGS_84/", true, 40.7128, -74.006, 10, true},             // with a CRS
		{" +40.7128-074.0060 ", true, 40.7128, -74.006, 0, false},                             // no "/"
		{"+4042.768-07400.360/", true, 40 + 42.768/60, -(74 + 0.36/60), 0, false},             // ±DDMM.M
		{"+404246.1-0740021.6/", true, 40 + 42/60.0 + 46.1/3600, -(74 + 21.6/3600), 0, false}, // ±DDMMSS.S
		{"+00.0000+000.0000/", true, 0, 0, 0, false},                                          // kept, as a photo's 0,0
		{"+90.0000-180.0000/", true, 90, -180, 0, false},
		{"+90.0001+000.0000/", false, 0, 0, 0, false},
		{"+45.0000+180.0001/", false, 0, 0, 0, false},
		{"+4075.000+00000.000/", false, 0, 0, 0, false}, // 75 minutes
		{"+123.4+005.0/", false, 0, 0, 0, false},        // three latitude digits
		{"40.7128,-74.0060", false, 0, 0, 0, false},
		{"+40.7128/", false, 0, 0, 0, false},
		{"+40.7128-074.0060+1+2/", false, 0, 0, 0, false},
		{"+40.71.28-074.0060/", false, 0, 0, 0, false},
		{"+.5-074.0060/", false, 0, 0, 0, false},
		{"+40.7128-074.0060x/", false, 0, 0, 0, false},
		{"", false, 0, 0, 0, false},
		{"/", false, 0, 0, 0, false},
	}
	for _, tt := range tests {
		lat, lon, hasAlt, alt, ok := iso6709(tt.in)
		if ok != tt.ok || !near(lat, tt.lat) || !near(lon, tt.lon) || hasAlt != tt.hasAlt || !near(alt, tt.alt) {
			t.Errorf("iso6709(%q) = %g,%g alt %v %g, %v; want %g,%g alt %v %g, %v",
				tt.in, lat, lon, hasAlt, alt, ok, tt.lat, tt.lon, tt.hasAlt, tt.alt, tt.ok)
		}
	}
}

func FuzzISO6709(f *testing.F) {
	for _, s := range []string{"+40.7128-074.0060/", "+40.7128-074.0060+010.000/", "+404246.1-0740021.6/", "-9-9-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lat, lon, _, alt, ok := iso6709(s)
		if ok && (math.Abs(lat) > 90 || math.Abs(lon) > 180 || math.IsNaN(lat) || math.IsNaN(lon) || math.IsNaN(alt) || math.IsInf(alt, 0)) {
			t.Errorf("iso6709(%q) = %g,%g alt %g: out of range", s, lat, lon, alt)
		}
	})
}

func TestAppleDate(t *testing.T) {
	tests := []struct {
		in     string
		ok     bool
		wall   time.Time
		off    int
		hasOff bool
	}{
		{"2022-12-31T20:30:00-0500", true, time.Date(2022, 12, 31, 20, 30, 0, 0, time.UTC), -300, true},
		{"2019-07-14T16:05:12+1000", true, time.Date(2019, 7, 14, 16, 5, 12, 0, time.UTC), 600, true},
		{"2019-07-14T16:05:12+05:30", true, time.Date(2019, 7, 14, 16, 5, 12, 0, time.UTC), 330, true},
		{"2019-07-14T16:05:12.25Z", true, time.Date(2019, 7, 14, 16, 5, 12, 250e6, time.UTC), 0, true},
		{"2019-07-14 16:05:12-0700", true, time.Date(2019, 7, 14, 16, 5, 12, 0, time.UTC), -420, true},
		{"2019-07-14T16:05:12", true, time.Date(2019, 7, 14, 16, 5, 12, 0, time.UTC), 0, false},
		{"1904-01-01T00:00:00Z", false, time.Time{}, 0, false},
		{"2019-13-14T16:05:12-0700", false, time.Time{}, 0, false},
		{"2019-07-14", false, time.Time{}, 0, false},
		{"", false, time.Time{}, 0, false},
	}
	for _, tt := range tests {
		wall, off, hasOff, ok := appleDate(tt.in)
		if ok != tt.ok || !wall.Equal(tt.wall) || off != tt.off || hasOff != tt.hasOff {
			t.Errorf("appleDate(%q) = %v %d %v %v; want %v %d %v %v", tt.in, wall, off, hasOff, ok, tt.wall, tt.off, tt.hasOff, tt.ok)
		}
	}
}
