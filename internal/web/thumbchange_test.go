package web

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/ctime"
	"github.com/clipidx/clipidx/store"
)

// recordOf reads the index's record of path.
func (e *env) recordOf(t *testing.T, path string) store.File {
	t.Helper()
	var rec store.File
	err := viewOf(e.db)(func(s *store.Snapshot) error {
		var ok bool
		var err error
		if rec, ok, err = s.File(path); err == nil && !ok {
			t.Fatalf("%s: no record", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// rewriteKeepingStat writes b over path and puts its modification time
// back to mtime (as exiftool -P does): only its ctime tells. It returns
// once the ctime differs from the recorded one (ctimes advance in clock
// ticks: the write may fall in the tick the build read).
func rewriteKeepingStat(t *testing.T, path string, b []byte, mtime time.Time, recorded int64) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if ctime.Of(fi) != recorded {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the file's ctime did not move")
}

// TestCachedThumbOfChangedFile: a file changed in place with its size and
// mtime kept answered 404 for its image but 200 for its thumbnail, from
// the cache (and 304 to a browser holding it). Its ctime, which the index
// records, now sends a cached thumbnail through a check of the content; a
// file whose ctime alone moved (its bytes put back, a chmod) keeps it.
func TestCachedThumbOfChangedFile(t *testing.T) {
	e := newEnv(t, nil)
	p := filepath.Join(e.dir, "wide_300x200.png")
	rec := e.recordOf(t, p)
	if rec.CtimeNs == 0 {
		t.Skip("this system records no ctime: size and mtime alone tell a change, as for a build")
	}
	id := e.idOf(t, p)
	code, _, h := e.get(t, "/thumb/"+id)
	if code != http.StatusOK {
		t.Fatalf("thumbnail: %d", code)
	}
	tag := h.Get("ETag")
	orig := mustRead(t, p)
	mtime := time.Unix(0, rec.MtimeNs)

	changed := append([]byte(nil), orig...)
	changed[len(changed)/2] ^= 0xff
	rewriteKeepingStat(t, p, changed, mtime, rec.CtimeNs)
	for _, tc := range []struct {
		path string
		hdr  []string
	}{
		{"/thumb/" + id, nil},
		{"/thumb/" + id, []string{"If-None-Match", tag}},
		{"/image/" + id, nil},
	} {
		if code, body, h := e.get(t, tc.path, tc.hdr...); code != http.StatusNotFound || !contains(body, "changed since it was indexed") {
			if h.Get("Content-Type") != "application/json" {
				body = nil // an image: its bytes say nothing here
			}
			t.Errorf("%s %v of a file changed in place: %d %s, want 404 (changed)", tc.path, tc.hdr, code, body)
		}
	}

	rewriteKeepingStat(t, p, orig, mtime, rec.CtimeNs)
	if code, body, _ := e.get(t, "/thumb/"+id); code != http.StatusOK {
		t.Errorf("thumbnail of a file whose bytes were put back: %d %s, want 200", code, body)
	}
	if code, body, _ := e.get(t, "/thumb/"+id, "If-None-Match", tag); code != http.StatusNotModified {
		t.Errorf("thumbnail held by the browser, of a file whose bytes were put back: %d %s, want 304", code, body)
	}
}
