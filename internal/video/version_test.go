package video

import (
	"errors"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		out, want string
		err       error
	}{
		{"ffmpeg version 5.1.6-0+deb12u1 Copyright", "5.1.6-0+deb12u1", nil},
		{"ffmpeg version n7.1 Copyright", "n7.1", nil},
		{"ffmpeg version 4.4.2-0ubuntu0.22.04.1", "4.4.2-0ubuntu0.22.04.1", nil},
		{"ffmpeg version 4.3.1 Copyright", "4.3.1", ErrOldFFmpeg},
		{"ffmpeg version 3.4.8", "3.4.8", ErrOldFFmpeg},
		{"ffmpeg version N-113000-gdeadbeef", "N-113000-gdeadbeef", nil},
		{"avconv version 12", "", ErrNoFFmpeg},
	} {
		v, err := checkVersion(c.out)
		if v != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%q: %q, %v; want %q, %v", c.out, v, err, c.want, c.err)
		}
	}
}
