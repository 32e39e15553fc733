package index

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/internal/video/videotest"
	"github.com/clipidx/clipidx/store"
)

// fakeStill is a photo the fake decoder takes (a PNG signature) whose
// eXIf chunk holds an iPhone's EXIF with the content identifier id ("":
// an Apple MakerNote without one).
func fakeStill(id, tag string) string {
	tiff := videotest.AppleEXIF(id, false)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(tiff)))
	chunk = append(append(append(chunk, "eXIf"...), tiff...), 0, 0, 0, 0)
	return png + string(chunk) + tag
}

// fakeLiveMovie is a Live Photo movie with the content identifier id that
// the fake sampler reads as frames at times.
func fakeLiveMovie(id, times string) string {
	return string(videotest.LiveMovie("FAKEVIDEO "+times+" "+id, "com.apple.quicktime.make", "Apple", video.ContentIDKey, id))
}

// liveRecords maps each Live Photo movie record of the index to its
// still.
func liveRecords(t *testing.T, db string) map[string]string {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]string{}
	n := 0
	err = r.View(func(s *store.Snapshot) error {
		err := s.Files("", func(p string, f store.File) error {
			if still, ok := f.LiveVideo(); ok {
				out[p] = still
			}
			return nil
		})
		if err != nil {
			return err
		}
		st, err := s.Stats()
		if err != nil {
			return err
		}
		n, err = s.LiveVideos(st)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(out) {
		t.Errorf("store counts %d Live Photo movies, the records are %d", n, len(out))
	}
	return out
}

// buildLive builds dir into db and checks the summary and the number of
// Live Photo movies it left out.
func buildLive(t *testing.T, db, dir string, o Options, want string, live int) *Summary {
	t.Helper()
	sum, err := Build(context.Background(), db, []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := sumOf(sum); got != want || sum.LiveVideos != live {
		t.Errorf("summary %s, %d Live Photo movies; want %s, %d (failures %v)", got, sum.LiveVideos, want, live, sum.Failures)
	}
	return sum
}

// TestBuildLivePhotos: a Live Photo's movie (a photo of its name beside
// it with the same content identifier) is recorded as left out, not
// sampled; a clip beside a photo with another identifier, or none, or in
// another folder, is a video. The record lives with the pair: unchanged
// builds pass it by, --retry-failed does not read it, the still going
// makes the movie a video, the still coming back (or a video indexed
// before the rule) folds the frames into the record, a renamed pair
// moves, and no ffmpeg is needed to tell.
func TestBuildLivePhotos(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	const a, b, c, d, e = "1F3B6D2A-0000-4000-8000-00000000000A", "1F3B6D2A-0000-4000-8000-00000000000B",
		"1F3B6D2A-0000-4000-8000-00000000000C", "1F3B6D2A-0000-4000-8000-00000000000D", "1F3B6D2A-0000-4000-8000-00000000000E"
	write(t, filepath.Join(dir, "IMG_0001.HEIC"), fakeStill(a, "one"))
	write(t, filepath.Join(dir, "IMG_0001.MOV"), fakeLiveMovie(a, "0,1.5"))
	write(t, filepath.Join(dir, "IMG_0002.JPG"), fakeStill(b, "two"))
	write(t, filepath.Join(dir, "IMG_0002.mov"), fakeLiveMovie(c, "0"))   // another identifier
	write(t, filepath.Join(dir, "IMG_0003.jpeg"), fakeStill("", "three")) // none in the still
	write(t, filepath.Join(dir, "IMG_0003.MOV"), fakeLiveMovie(d, "0"))
	write(t, filepath.Join(dir, "IMG_0004.HEIC"), fakeStill(e, "four"))
	write(t, filepath.Join(dir, "elsewhere", "IMG_0004.MOV"), fakeLiveMovie(e, "0")) // another folder
	write(t, filepath.Join(dir, "clip.mp4"), "FAKEVIDEO 0,2 clip")
	en, s := &fakeEnc{}, &fakeSampler{}
	build := func(o Options, want string, live int) *Summary {
		t.Helper()
		return buildLive(t, db, dir, o, want, live)
	}
	sampled := func(want int64) {
		t.Helper()
		if n := s.calls.Swap(0); n != want {
			t.Errorf("%d videos sampled, want %d", n, want)
		}
	}
	wantLive := func(want map[string]string) {
		t.Helper()
		got := liveRecords(t, db)
		if len(got) != len(want) {
			t.Errorf("Live Photo movies %v, want %v", got, want)
			return
		}
		for p, still := range want {
			if got[filepath.Join(dir, p)] != still {
				t.Errorf("Live Photo movies %v, want %v", got, want)
			}
		}
	}

	build(videoOpts(en, s), "added=8 updated=0 unchanged=0 reused=0 removed=0 failed=0", 1)
	sampled(4)
	wantRecords(t, db, dir, "IMG_0001.HEIC", "IMG_0001.MOV!", "IMG_0002.JPG", "IMG_0002.mov#t=0", "IMG_0003.MOV#t=0",
		"IMG_0003.jpeg", "IMG_0004.HEIC", "clip.mp4#t=0", "clip.mp4#t=2", "elsewhere/IMG_0004.MOV#t=0")
	wantLive(map[string]string{"IMG_0001.MOV": "IMG_0001.HEIC"})

	// Unchanged, and with --retry-failed: nothing read again.
	build(videoOpts(en, s), "added=0 updated=0 unchanged=9 reused=0 removed=0 failed=0", 0)
	o := videoOpts(en, s)
	o.RetryFailed = true
	build(o, "added=0 updated=0 unchanged=9 reused=0 removed=0 failed=0", 0)
	sampled(0)
	wantLive(map[string]string{"IMG_0001.MOV": "IMG_0001.HEIC"})

	// The still deleted: the movie is a video now.
	if err := os.Remove(filepath.Join(dir, "IMG_0001.HEIC")); err != nil {
		t.Fatal(err)
	}
	build(videoOpts(en, s), "added=0 updated=1 unchanged=7 reused=0 removed=1 failed=0", 0)
	sampled(1)
	wantLive(map[string]string{})
	wantRecords(t, db, dir, "IMG_0001.MOV#t=0", "IMG_0001.MOV#t=1.5", "IMG_0002.JPG", "IMG_0002.mov#t=0", "IMG_0003.MOV#t=0",
		"IMG_0003.jpeg", "IMG_0004.HEIC", "clip.mp4#t=0", "clip.mp4#t=2", "elsewhere/IMG_0004.MOV#t=0")

	// The still back beside an indexed movie (as after an upgrade from a
	// clipidx without this rule): its frames give way, nothing sampled.
	// (The still's vector was freed with it: embedded again.)
	write(t, filepath.Join(dir, "IMG_0001.HEIC"), fakeStill(a, "one"))
	build(videoOpts(en, s), "added=1 updated=0 unchanged=7 reused=0 removed=0 failed=0", 1)
	sampled(0)
	wantLive(map[string]string{"IMG_0001.MOV": "IMG_0001.HEIC"})

	// The pair renamed: the record moves with it.
	rename(t, filepath.Join(dir, "IMG_0001.HEIC"), filepath.Join(dir, "Beach.heic"))
	rename(t, filepath.Join(dir, "IMG_0001.MOV"), filepath.Join(dir, "Beach.mov"))
	build(videoOpts(en, s), "added=0 updated=0 unchanged=7 reused=1 removed=2 failed=0", 1)
	sampled(0)
	wantLive(map[string]string{"Beach.mov": "Beach.heic"})

	// A touched movie that is still the still's: checked again, left out
	// (counted as found again).
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "Beach.mov"), later, later); err != nil {
		t.Fatal(err)
	}
	build(videoOpts(en, s), "added=0 updated=0 unchanged=8 reused=0 removed=0 failed=0", 1)
	sampled(0)

	// A touched still: the movie is checked again and its record takes
	// the still's new stamp, but nothing is new (no movie counted).
	if err := os.Chtimes(filepath.Join(dir, "Beach.heic"), later, later); err != nil {
		t.Fatal(err)
	}
	build(videoOpts(en, s), "added=0 updated=0 unchanged=9 reused=0 removed=0 failed=0", 0)
	sampled(0)
	wantLive(map[string]string{"Beach.mov": "Beach.heic"})

	// The still rewritten by an app that gave it another identifier (its
	// size and mtime kept): the movie is a video; and back.
	stillPath := filepath.Join(dir, "Beach.heic")
	fi, err := os.Stat(stillPath)
	if err != nil {
		t.Fatal(err)
	}
	write(t, stillPath, fakeStill(b, "one")) // same length as before
	if err := os.Chtimes(stillPath, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	build(videoOpts(en, s), "added=0 updated=2 unchanged=7 reused=0 removed=0 failed=0", 0)
	sampled(1)
	wantLive(map[string]string{})
	write(t, stillPath, fakeStill(a, "one"))
	build(videoOpts(en, s), "added=0 updated=1 unchanged=7 reused=0 removed=0 failed=0", 1)
	sampled(0)
	wantLive(map[string]string{"Beach.mov": "Beach.heic"})

	// Without ffmpeg, a new pair is told apart all the same: left out,
	// not skipped.
	write(t, filepath.Join(dir, "new", "IMG_0005.HEIC"), fakeStill(a+"5", "five"))
	write(t, filepath.Join(dir, "new", "IMG_0005.MOV"), fakeLiveMovie(a+"5", "0"))
	sum := build(opts(en), "added=1 updated=0 unchanged=9 reused=0 removed=0 failed=0", 1)
	if sum.VideosSkipped != 0 {
		t.Errorf("%d videos skipped for want of ffmpeg, want none", sum.VideosSkipped)
	}
	wantLive(map[string]string{"Beach.mov": "Beach.heic", "new/IMG_0005.MOV": "IMG_0005.HEIC"})
	build(videoOpts(en, s), "added=0 updated=0 unchanged=11 reused=0 removed=0 failed=0", 0)
	sampled(0)
}

// TestBuildLivePhotosWithin: a partial build of a photo alone (a
// watcher's event) looks at the movie of its name too: the still deleted
// makes it a video, the still back a Live Photo's movie again.
func TestBuildLivePhotosWithin(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	const id = "2A2B2C2D-0000-4000-8000-000000000001"
	still, movie := filepath.Join(dir, "IMG_0100.heic"), filepath.Join(dir, "IMG_0100.mov")
	write(t, still, fakeStill(id, "s"))
	write(t, movie, fakeLiveMovie(id, "0,1"))
	write(t, filepath.Join(dir, "other.png"), png+"other")
	en, s := &fakeEnc{}, &fakeSampler{}
	build := func(within []string, want string, live int) {
		t.Helper()
		o := videoOpts(en, s)
		o.Within = within
		buildLive(t, db, dir, o, want, live)
	}
	build(nil, "added=2 updated=0 unchanged=0 reused=0 removed=0 failed=0", 1)
	wantRecords(t, db, dir, "IMG_0100.heic", "IMG_0100.mov!", "other.png")

	if err := os.Remove(still); err != nil {
		t.Fatal(err)
	}
	build([]string{still}, "added=0 updated=1 unchanged=0 reused=0 removed=1 failed=0", 0)
	wantRecords(t, db, dir, "IMG_0100.mov#t=0", "IMG_0100.mov#t=1", "other.png")
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d videos sampled, want the movie once", n)
	}

	// The still back: its vector, kept by the partial build that removed
	// it (store.KeepUnused), serves again.
	write(t, still, fakeStill(id, "s"))
	build([]string{still}, "added=0 updated=0 unchanged=0 reused=1 removed=0 failed=0", 1)
	wantRecords(t, db, dir, "IMG_0100.heic", "IMG_0100.mov!", "other.png")
	if got := liveRecords(t, db); got[movie] != "IMG_0100.heic" {
		t.Errorf("Live Photo movies %v", got)
	}
}

// TestBuildLivePhotoStillChangedWithoutFFmpeg: the still rewritten
// without its identifier while ffmpeg is missing makes the movie a video
// that cannot be sampled: the record that called it a Live Photo's movie
// goes all the same (the still's own record moves on in that build), and
// the next build with ffmpeg samples the movie.
func TestBuildLivePhotoStillChangedWithoutFFmpeg(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	const id = "3C3D3E3F-0000-4000-8000-000000000001"
	still, movie := filepath.Join(dir, "IMG_0200.HEIC"), filepath.Join(dir, "IMG_0200.MOV")
	write(t, still, fakeStill(id, "s"))
	write(t, movie, fakeLiveMovie(id, "0,1"))
	en, s := &fakeEnc{}, &fakeSampler{}
	build := func(o Options, want string) *Summary {
		t.Helper()
		return buildLive(t, db, dir, o, want, 0)
	}
	buildLive(t, db, dir, videoOpts(en, s), "added=1 updated=0 unchanged=0 reused=0 removed=0 failed=0", 1)
	wantRecords(t, db, dir, "IMG_0200.HEIC", "IMG_0200.MOV!")

	write(t, still, fakeStill("", "another photo"))
	if sum := build(opts(en), "added=0 updated=1 unchanged=0 reused=0 removed=0 failed=0"); sum.VideosSkipped != 1 {
		t.Errorf("%d videos skipped for want of ffmpeg, want the movie", sum.VideosSkipped)
	}
	wantRecords(t, db, dir, "IMG_0200.HEIC")
	if got := liveRecords(t, db); len(got) != 0 {
		t.Errorf("Live Photo movies %v after the still lost its identifier", got)
	}

	build(opts(en), "added=0 updated=0 unchanged=1 reused=0 removed=0 failed=0")
	build(videoOpts(en, s), "added=1 updated=0 unchanged=1 reused=0 removed=0 failed=0")
	wantRecords(t, db, dir, "IMG_0200.HEIC", "IMG_0200.MOV#t=0", "IMG_0200.MOV#t=1")
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d videos sampled, want the movie once", n)
	}
}

// TestBuildLivePhotoNameCase: a movie whose name is its still's, or the
// still's in lower or upper case (a copy through a tool that changes
// case), is the still's Live Photo movie, which the store then finds from
// the still (its Live flag, kind:live, serve's LIVE); a name in some other
// case (Img_6.mov beside IMG_6.HEIC) is no pair the store could find
// back, so that movie is a video.
func TestBuildLivePhotoNameCase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "idx.db")
	const a, b = "4A4B4C4D-0000-4000-8000-000000000005", "4A4B4C4D-0000-4000-8000-000000000006"
	write(t, filepath.Join(dir, "IMG_5.HEIC"), fakeStill(a, "five"))
	write(t, filepath.Join(dir, "img_5.mov"), fakeLiveMovie(a, "0"))
	write(t, filepath.Join(dir, "IMG_6.HEIC"), fakeStill(b, "six"))
	write(t, filepath.Join(dir, "Img_6.mov"), fakeLiveMovie(b, "0"))
	en, s := &fakeEnc{}, &fakeSampler{}
	buildLive(t, db, dir, videoOpts(en, s), "added=3 updated=0 unchanged=0 reused=0 removed=0 failed=0", 1)
	wantRecords(t, db, dir, "IMG_5.HEIC", "IMG_6.HEIC", "Img_6.mov#t=0", "img_5.mov!")
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.View(func(s *store.Snapshot) error {
		for still, want := range map[string]bool{"IMG_5.HEIC": true, "IMG_6.HEIC": false} {
			m, _, err := s.Meta(filepath.Join(dir, still))
			movie, merr := s.LiveMovie(filepath.Join(dir, still))
			if err != nil || merr != nil || m.Live != want || (movie != "") != want {
				t.Errorf("%s: Live flag %v, movie %q (%v, %v); want a Live Photo: %v", still, m.Live, movie, err, merr, want)
			}
		}
		return nil
	})
}
