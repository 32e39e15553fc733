package search

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/clipidx/clipidx/store"
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

// TestGroupVideosSortByDate: with frames grouped by video, a date order
// lists the K best videos and files (the set a score order gives), not the
// K oldest of the wider scan grouping needs.
func TestGroupVideosSortByDate(t *testing.T) {
	path := t.TempDir() + "/s.db"
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: 8}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	md := fakeMeta{}
	var b store.Batch
	// One video of many frames crowds the top: grouping must widen.
	for i := range 12 {
		p := "/v/long.mp4" + store.FrameSep + strconv.Itoa(i)
		b.Put(p, store.File{Hash: [32]byte{byte(i), 7}}, randVec(r, 8, 1))
		md[p] = store.Meta{Taken: day("2020-05-05"), TakenSource: store.TakenVideo}
	}
	for i := range 20 {
		p := "/p/" + strconv.Itoa(i) + ".jpg"
		b.Put(p, store.File{Hash: [32]byte{byte(i), 8}}, randVec(r, 8, 1))
		md[p] = store.Meta{Taken: day("2019-01-01") + int64(i)*86400, TakenSource: store.TakenEXIF}
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.View(func(s *store.Snapshot) error {
		for seed := range uint64(20) {
			q := randVec(rand.New(rand.NewPCG(seed, 9)), 8, 1)
			best, err := Search(s, q, Options{K: 4, Meta: md.source()})
			if err != nil {
				t.Fatal(err)
			}
			for _, order := range []Order{ByDate, ByDateDesc} {
				got, err := Search(s, q, Options{K: 4, Order: order, Meta: md.source()})
				if err != nil {
					t.Fatal(err)
				}
				if !sameSet(resultPaths(got), resultPaths(best)) {
					t.Fatalf("query %d, %v: %v, want the paths of %v", seed, order, resultPaths(got), resultPaths(best))
				}
			}
		}
		// A listing (qualifiers alone) groups frames too: the video once,
		// every frame with Frames.
		req, err := ParseRequest([]string{"kind:video"})
		if err != nil {
			t.Fatal(err)
		}
		for _, frames := range []bool{false, true} {
			got, err := List(s, Options{K: 20, Filter: req.Filter, Meta: md.source(), Frames: frames})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 12}[frames]; len(got) != want {
				t.Errorf("kind:video listing, Frames %v: %d results %v, want %d", frames, len(got), resultPaths(got), want)
			}
		}
		return nil
	})
}
