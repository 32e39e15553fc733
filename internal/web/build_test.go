package web

import (
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
)

// slowEncoder makes a build last long enough to search during it.
type slowEncoder struct{ index.Encoder }

func (s slowEncoder) EncodeImages(px []float32, n int) ([]float32, error) {
	time.Sleep(40 * time.Millisecond)
	return s.Encoder.EncodeImages(px, n)
}

// TestSearchDuringBuild serves while a build adds 40 images: every request
// succeeds, the growing index shows without a restart, and the new files
// are served once indexed.
func TestSearchDuringBuild(t *testing.T) {
	e := newEnv(t, nil)
	const added = 40
	for i := 0; i < added; i++ {
		img := image.NewRGBA(image.Rect(0, 0, 24+i, 20))
		for j := range img.Pix {
			img.Pix[j] = byte(i*31 + j*7)
		}
		f, err := os.Create(filepath.Join(e.dir, fmt.Sprintf("new%02d.png", i)))
		if err != nil {
			t.Fatal(err)
		}
		png.Encode(f, img)
		f.Close()
	}
	var building atomic.Bool
	building.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer building.Store(false)
		build(t, e.db, index.Options{Encoder: slowEncoder{tiny(t)}, BatchSize: 2, CommitEvery: 2, CommitInterval: 50 * time.Millisecond}, e.dir)
	}()
	during, seen := 0, map[int]bool{}
	for building.Load() {
		code, body, _ := e.get(t, "/api/status")
		var st Status
		if code != 200 || json.Unmarshal(body, &st) != nil {
			t.Fatalf("status during the build: %d %s", code, body)
		}
		seen[st.Images] = true
		a := e.search(t, "/api/search?k=100&q=pattern")
		if len(a.Results) != 0 {
			last := a.Results[len(a.Results)-1]
			if code, _, _ := e.get(t, last.Thumb); code != 200 {
				t.Errorf("thumb of %s during the build: %d", last.Path, code)
			}
		}
		if building.Load() {
			during++
		}
	}
	<-done
	growing := 0
	for n := range seen {
		if n > 7 && n < 7+added {
			growing++
		}
	}
	if during < 3 || growing == 0 {
		t.Errorf("%d requests during the build, %d partial counts seen (%v): the build did not overlap the requests", during, growing, seen)
	}
	a := e.search(t, "/api/search?k=100&q=pattern")
	if len(a.Results) != 7+added {
		t.Fatalf("after the build: %d results, want %d", len(a.Results), 7+added)
	}
	id := e.idOf(t, filepath.Join(e.dir, "new39.png"))
	if code, _, _ := e.get(t, "/thumb/"+id); code != 200 {
		t.Errorf("thumb of a new image: %d", code)
	}
}
