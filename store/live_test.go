package store

import (
	"path/filepath"
	"testing"
)

// TestLiveMovie: the movie recorded as a still's Live Photo movie is found
// from the still (its name in another case too), and only a record that
// names that still: not a frame, a photo of the same stem, a movie that
// names another still, nor a name that merely begins with the stem.
func TestLiveMovie(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	live := func(still string) File {
		return File{Size: 5, Kind: KindLiveVideo, Err: LiveVideoNote + still}
	}
	var b Batch
	b.Put("/p/IMG_1.HEIC", File{Size: 1, Hash: hashOf("1")}, vec(1, 8))
	b.Put("/p/IMG_1.MOV", live("IMG_1.HEIC"), nil)
	b.Put("/p/IMG_1.1.MOV", live("IMG_1.HEIC"), nil) // another stem
	b.Put("/p/Beach.jpg", File{Size: 1, Hash: hashOf("2")}, vec(2, 8))
	b.Put("/p/beach.mov", live("Beach.jpg"), nil)
	b.Put("/p/IMG_2.JPG", File{Size: 1, Hash: hashOf("3")}, vec(3, 8))
	b.Put("/p/IMG_2.MOV#t=0", File{Size: 1, Hash: hashOf("4")}, vec(4, 8))
	b.Put("/p/IMG_3.JPG", File{Size: 1, Hash: hashOf("5")}, vec(5, 8))
	b.Put("/p/IMG_3.MOV", live("IMG_3.HEIC"), nil) // names another still
	b.Put("/p/IMG_30.MOV", live("IMG_3.JPG"), nil)
	b.Put("/p/IMG_4.JPG", File{Size: 1, Hash: hashOf("6")}, vec(6, 8))
	b.Put("/p/IMG_4.MOV", File{Size: 3, Err: "not a readable video"}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	view(t, path, func(s *Snapshot) {
		for still, want := range map[string]string{
			"/p/IMG_1.HEIC": "/p/IMG_1.MOV", "/p/Beach.jpg": "/p/beach.mov",
			"/p/IMG_2.JPG": "", "/p/IMG_3.JPG": "", "/p/IMG_4.JPG": "", "/p/none.jpg": "", "/p/.jpg": "",
		} {
			got, err := s.LiveMovie(still)
			if err != nil || got != want {
				t.Errorf("LiveMovie(%s) = %q, %v; want %q", still, got, err, want)
			}
		}
	})
}
