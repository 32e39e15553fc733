package store

import "testing"

func TestFramePath(t *testing.T) {
	for _, c := range []struct {
		t    float64
		want string
	}{{0, "/v/a.mp4#t=0"}, {83.4, "/v/a.mp4#t=83.4"}, {83.4000001, "/v/a.mp4#t=83.4"}, {1.23456, "/v/a.mp4#t=1.235"}, {3600, "/v/a.mp4#t=3600"}} {
		p := FramePath("/v/a.mp4", c.t)
		if p != c.want {
			t.Errorf("FramePath(%g) = %q, want %q", c.t, p, c.want)
		}
		v, tt, ok := SplitFrame(p)
		if !ok || v != "/v/a.mp4" || FrameTime(tt) != FrameTime(c.t) {
			t.Errorf("SplitFrame(%q) = %q, %g, %v", p, v, tt, ok)
		}
	}
	for _, p := range []string{"/v/a.mp4", "/v/a.tar#key", "/v/a.mp4#t=", "/v/a.mp4#t=x", "/v/a.mp4#t=1.50", "/v/a.mp4#t=-1", "#t=1"} {
		if _, _, ok := SplitFrame(p); ok {
			t.Errorf("SplitFrame(%q) took it for a frame", p)
		}
	}
}
