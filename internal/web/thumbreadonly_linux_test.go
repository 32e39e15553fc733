package web

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnly makes dir read-only for this process: by its mode for a user
// whom modes stop, by a read-only bind mount for root (whom they do not),
// or skips the test saying why.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("root ignores modes, and a read-only bind mount may not be made here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("root ignores modes, and a read-only bind mount may not be made here: %v", err)
	}
}

// TestThumbCacheReadOnly: a thumbnail folder that exists but may not be
// written kept nothing and said nothing. ThumbCacheErr now names it
// (ErrThumbsReadOnly); the thumbnails it holds are still served from it,
// and others are made on each request.
func TestThumbCacheReadOnly(t *testing.T) {
	decodes := countDecodes(t)

	thumbDir := filepath.Join(t.TempDir(), "thumbs")
	e := newEnv(t, func(o *Options) { o.ThumbDir = thumbDir })
	kept := filepath.Join(e.dir, "wide_300x200.png")
	if code, body, _ := e.get(t, "/thumb/"+e.srv.ids.id(kept)); code != http.StatusOK {
		t.Fatalf("first thumbnail: %d %q", code, body)
	}
	before, err := os.ReadDir(thumbDir)
	if err != nil || len(before) != 1 {
		t.Fatalf("cache after one thumbnail: %v %v, want one entry", before, err)
	}
	readOnly(t, thumbDir)

	ro := &env{dir: e.dir, db: e.db}
	ro.start(t, func(o *Options) { o.ThumbDir = thumbDir })
	if err := ro.srv.ThumbCacheErr(); !errors.Is(err, ErrThumbsReadOnly) || !strings.Contains(err.Error(), thumbDir) {
		t.Errorf("ThumbCacheErr() = %v, want ErrThumbsReadOnly naming %s", err, thumbDir)
	}
	n := decodes.Load()
	if code, _, _ := ro.get(t, "/thumb/"+ro.srv.ids.id(kept)); code != http.StatusOK || decodes.Load() != n {
		t.Errorf("the kept thumbnail: %d with %d decodes, want 200 from the cache", code, decodes.Load()-n)
	}
	other := filepath.Join(e.dir, "checker_320x240.png")
	for i := range 2 {
		n := decodes.Load()
		if code, _, _ := ro.get(t, "/thumb/"+ro.srv.ids.id(other)); code != http.StatusOK || decodes.Load() != n+1 {
			t.Errorf("another thumbnail, request %d: %d with %d decodes, want 200 made anew", i, code, decodes.Load()-n)
		}
	}
	after, _ := os.ReadDir(thumbDir)
	if !slices.EqualFunc(before, after, func(a, b os.DirEntry) bool { return a.Name() == b.Name() }) {
		t.Errorf("the read-only folder holds %v, had %v", after, before)
	}
}
