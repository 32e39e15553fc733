package search

import (
	"slices"
	"testing"
)

func TestGroupVideos(t *testing.T) {
	res := []Result{
		{Path: "/v/a.mp4#t=83.4", Score: 0.9},
		{Path: "/p/x.jpg", Score: 0.8},
		{Path: "/v/a.mp4#t=0", Score: 0.7},
		{Path: "/v/b.mkv#t=2", Score: 0.6},
		{Path: "/v/a.mp4#t=12", Score: 0.5},
		{Path: "/p/y.jpg", Score: 0.4},
	}
	var got []string
	for _, r := range GroupVideos(res, 0) {
		got = append(got, r.Path)
	}
	if want := []string{"/v/a.mp4#t=83.4", "/p/x.jpg", "/v/b.mkv#t=2", "/p/y.jpg"}; !slices.Equal(got, want) {
		t.Errorf("grouped %v, want %v", got, want)
	}
	if n := len(GroupVideos(res, 2)); n != 2 {
		t.Errorf("k=2 gave %d results", n)
	}
}
