package web

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"image"
	"image/jpeg"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/damage"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

func TestSplitQuery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a red bicycle", []string{"a red bicycle"}},
		{"  beach   -people  ", []string{"beach", "-people"}},
		{"beach -people walking +2:sunset sky", []string{"beach", "-people walking", "+2:sunset sky"}},
		{`"-5 degrees" snow`, []string{`\-5 degrees snow`}},
		{`cat "+plus sign"`, []string{`cat +plus sign`}},
		{"3:30 pm", []string{"3:30 pm"}},
		{"- dash alone", []string{"- dash alone"}},
		{"", nil},
		{`"unclosed quote`, []string{"unclosed quote"}},
		{`"place:paris"`, []string{`\place:paris`}},
		{`a "b:c" year:2019`, []string{`a \b:c year:2019`}},
		{`"snow year:2019" -people`, []string{`snow \year:2019`, "-people"}},
	} {
		if got := SplitQuery(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitQuery(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSearchIsTheCLISearch checks that /api/search ranks as search.Query
// does for the same arguments, with ids, thumbs and images for each.
func TestSearchIsTheCLISearch(t *testing.T) {
	e := newEnv(t, nil)
	for _, q := range []string{"a red bicycle", "stripes -gray +0.5:noise"} {
		a := e.search(t, "/api/search?k=5&q="+url.QueryEscape(q))
		terms, err := search.ParseQuery(SplitQuery(q))
		if err != nil {
			t.Fatal(err)
		}
		want, err := search.Query(context.Background(), viewOf(e.db), terms, func() (search.Encoder, error) { return tiny(t), nil }, search.Options{K: 5})
		if err != nil {
			t.Fatal(err)
		}
		if a.Query != q || len(a.Results) != len(want) || len(want) != 5 {
			t.Fatalf("%q: answer %+v, want %d results", q, a, len(want))
		}
		for i, x := range a.Results {
			if x.Path != want[i].Path || x.Score != want[i].Score {
				t.Errorf("%q: result %d is %s %v, want %s %v", q, i, x.Path, x.Score, want[i].Path, want[i].Score)
			}
			if !validID(x.ID) || strings.Contains(x.ID, "photos") || x.Thumb != "/thumb/"+x.ID || x.Image != "/image/"+x.ID {
				t.Errorf("result %d: id %q thumb %q image %q", i, x.ID, x.Thumb, x.Image)
			}
		}
	}
	// under and threshold filter; the URL's mistakes are 400s.
	a := e.search(t, "/api/search?k=100&q=x&under="+filepath.Join(e.dir, "none"))
	if len(a.Results) != 0 {
		t.Errorf("under an empty folder: %d results", len(a.Results))
	}
	// Each under= counts, as each --under does.
	all := e.search(t, "/api/search?k=100&q=x")
	two := url.Values{"k": {"100"}, "q": {"x"}, "under": {filepath.Join(e.dir, "none"), e.dir}}
	if a := e.search(t, "/api/search?"+two.Encode()); len(a.Results) != len(all.Results) || len(all.Results) == 0 {
		t.Errorf("under an empty folder and the photos' folder: %d results, want all %d", len(a.Results), len(all.Results))
	}
	a = e.search(t, "/api/search?k=100&q=x&threshold=0.9999")
	for _, r := range a.Results {
		if r.Score < 0.9999 {
			t.Errorf("threshold 0.9999 kept %v", r.Score)
		}
	}
	for _, bad := range []string{"k=0&q=x", "k=abc&q=x", "q=x&under=relative/dir", "q=x&threshold=NaN", "q=", "q=%40/etc/passwd", "q=cat+%2B%40/etc/hosts"} {
		if code, body, _ := e.get(t, "/api/search?"+bad); code != http.StatusBadRequest {
			t.Errorf("/api/search?%s: %d %s, want 400", bad, code, body)
		}
	}
}

func TestSimilar(t *testing.T) {
	e := newEnv(t, nil)
	p := filepath.Join(e.dir, "wide_300x200.png")
	id := e.idOf(t, p)
	a := e.search(t, "/api/similar?k=3&id="+id)
	if len(a.Results) != 3 || a.Results[0].Path != p || a.Results[0].Score < 0.9999 {
		t.Fatalf("similar to %s: %+v", p, a.Results)
	}
	for _, bad := range []string{"", "AAAAAAAAAAAAAAAA", "../../etc/passwd", id + "x"} {
		if code, _, _ := e.get(t, "/api/similar?id="+bad); code != http.StatusNotFound {
			t.Errorf("similar id %q: %d, want 404", bad, code)
		}
	}
}

func TestStatus(t *testing.T) {
	e := newEnv(t, nil)
	code, body, _ := e.get(t, "/api/status")
	var st Status
	if code != 200 || json.Unmarshal(body, &st) != nil {
		t.Fatalf("status: %d %s", code, body)
	}
	if st.Images != 7 || st.Model != "tiny-clip-h" || st.Weights != "stored" || st.LastBuild == nil || len(st.LastBuild.Roots) != 1 || st.DBBytes <= 0 {
		t.Errorf("status %+v", st)
	}
}

func TestPage(t *testing.T) {
	e := newEnv(t, nil)
	for path, want := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/app.css": "text/css"} {
		code, body, h := e.get(t, path)
		if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), want) || len(body) < 100 {
			t.Errorf("%s: %d %s, %d bytes", path, code, h.Get("Content-Type"), len(body))
		}
		if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	if code, _, _ := e.get(t, "/nothing"); code != 404 {
		t.Errorf("/nothing: %d", code)
	}
}

func TestThumbAndImage(t *testing.T) {
	e := newEnv(t, nil)
	orient := filepath.Join("..", "..", "preprocess", "testdata", "images", "orient6.jpg")
	copyFile(t, orient, filepath.Join(e.dir, "orient6.jpg"))
	big := image.NewRGBA(image.Rect(0, 0, 1000, 400))
	for i := range big.Pix {
		big.Pix[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	jpeg.Encode(&buf, big, nil)
	os.WriteFile(filepath.Join(e.dir, "big_1000x400.jpg"), buf.Bytes(), 0o644)
	build(t, e.db, index.Options{}, e.dir)

	ocfg, err := jpeg.DecodeConfig(bytes.NewReader(mustRead(t, orient)))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]int{
		"tiny_50x30.png":   {50, 30}, // never enlarged
		"wide_300x200.png": {256, 171},
		"big_1000x400.jpg": {256, 102},
		"orient6.jpg":      {ocfg.Height, ocfg.Width}, // EXIF 6: turned a quarter
	} {
		id := e.idOf(t, filepath.Join(e.dir, name))
		code, body, h := e.get(t, "/thumb/"+id)
		if code != 200 || h.Get("Content-Type") != "image/jpeg" || h.Get("ETag") == "" || h.Get("Cache-Control") != "private, no-cache" {
			t.Fatalf("thumb of %s: %d %v", name, code, h)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(body))
		if err != nil || cfg.Width != want[0] || cfg.Height != want[1] {
			t.Errorf("thumb of %s: %dx%d (%v), want %dx%d", name, cfg.Width, cfg.Height, err, want[0], want[1])
		}
		// Its ETag, weak, in a list, or "*": each one is the client's copy.
		for _, inm := range []string{h.Get("ETag"), "W/" + h.Get("ETag"), `"other", ` + h.Get("ETag"), "*"} {
			if code, _, _ := e.get(t, "/thumb/"+id, "If-None-Match", inm); code != http.StatusNotModified {
				t.Errorf("thumb of %s with If-None-Match %s: %d, want 304", name, inm, code)
			}
		}
		if code, _, _ := e.get(t, "/thumb/"+id, "If-None-Match", `"other"`); code != 200 {
			t.Errorf("thumb of %s with another ETag: %d, want 200", name, code)
		}
		code, body, h = e.get(t, "/image/"+id)
		wantType := map[string]string{".png": "image/png", ".jpg": "image/jpeg"}[filepath.Ext(name)]
		if code != 200 || h.Get("Content-Type") != wantType || !bytes.Equal(body, mustRead(t, filepath.Join(e.dir, name))) {
			t.Errorf("image %s: %d %s, %d bytes", name, code, h.Get("Content-Type"), len(body))
		}
	}
	// The cache holds one file per content, named by its hash.
	ents, _ := os.ReadDir(e.srv.o.ThumbDir)
	if len(ents) != 4 {
		t.Errorf("thumbnail cache holds %d files, want 4", len(ents))
	}
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestThumbCacheEvicts(t *testing.T) {
	dir := t.TempDir()
	th, err := openThumbs(dir, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i := 0; i < 6; i++ {
		th.put(store.Hash{byte(i)}, make([]byte, 3000))
		os.Chtimes(th.file(store.Hash{byte(i)}), old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
	}
	var total int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > 10_000 {
		t.Errorf("cache holds %d bytes, over its cap", total)
	}
	if th.get(store.Hash{5}) == nil || th.get(store.Hash{0}) != nil {
		t.Errorf("eviction kept the oldest or dropped the newest: %d files", len(ents))
	}
}

// TestRefusals covers what the server never serves.
func TestRefusals(t *testing.T) {
	e := newEnv(t, nil)
	// Paths: traversal and encoded tricks get 400 or 404, never a redirect.
	for _, target := range []string{
		"/thumb/../../../etc/passwd", "/image/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/image/..%2F..%2Fetc%2Fpasswd",
		"//api/status", "/./api/status", "/thumb/%2Fetc%2Fpasswd", "/image//etc/passwd", "/api/../api/status",
		"/thumb/" + strings.Repeat("A", 16) + "/..", "/image/" + filepath.Join(e.dir, "wide_300x200.png"),
	} {
		code, loc := e.raw(t, target)
		if (code != 400 && code != 404) || loc != "" {
			t.Errorf("GET %s: %d (Location %q), want 400 or 404", target, code, loc)
		}
	}
	// A foreign Host (DNS rebinding) without a token.
	if code, _, _ := e.get(t, "/api/status", "Host", "evil.example:80"); code != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", code)
	}
	if code, _, _ := e.get(t, "/api/status", "Host", "localhost:"+e.ts.URL[strings.LastIndex(e.ts.URL, ":")+1:]); code != 200 {
		t.Errorf("localhost Host: %d, want 200", code)
	}
	// A cross-origin POST.
	img := mustRead(t, filepath.Join(e.dir, "wide_300x200.png"))
	req, _ := http.NewRequest("POST", e.ts.URL+"/api/search/image", bytes.NewReader(img))
	req.Header.Set("Origin", "http://evil.example")
	if code, _, h := do(t, req); code != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("cross-origin POST: %d", code)
	}
	req, _ = http.NewRequest("POST", e.ts.URL+"/api/search/image", bytes.NewReader(img))
	req.Header.Set("Origin", e.ts.URL)
	if code, body, _ := do(t, req); code != 200 {
		t.Errorf("same-origin POST: %d %s", code, body)
	}

	// Removed, changed, and linked out of the indexed folders.
	removed, changed, linked := filepath.Join(e.dir, "gray_260x200.png"), filepath.Join(e.dir, "checker_320x240.png"), filepath.Join(e.dir, "noise_257x231.png")
	ids := map[string]string{}
	for _, p := range []string{removed, changed, linked} {
		ids[p] = e.idOf(t, p)
		for _, what := range []string{"/thumb/", "/image/", "/api/similar?id="} {
			if code, _, _ := e.get(t, what+ids[p]); code != 200 {
				t.Fatalf("%s%s before the change: %d", what, p, code)
			}
		}
	}
	os.Remove(removed)
	os.WriteFile(changed, append(mustRead(t, changed), 0), 0o644)
	// The link points at a copy outside with the very same size, time
	// and content: only the folder check can refuse it.
	outside := filepath.Join(t.TempDir(), "secret.png")
	copyFile(t, linked, outside)
	lfi, _ := os.Stat(linked)
	os.Chtimes(outside, lfi.ModTime(), lfi.ModTime())
	os.Remove(linked)
	if err := os.Symlink(outside, linked); err != nil {
		t.Fatal(err)
	}
	// Each 404 says why (once every one said "no such image in the
	// index" of a file a search lists), and never names a path.
	reason := map[string]string{removed: "removed or moved since it was indexed", changed: "changed since it was indexed", linked: "outside the indexed folders"}
	for _, p := range []string{removed, changed, linked} {
		for _, what := range []string{"/thumb/", "/image/"} {
			code, body, _ := e.get(t, what+ids[p])
			if code != http.StatusNotFound || !strings.Contains(string(body), reason[p]) || strings.Contains(string(body), "/") {
				t.Errorf("%s of %s after the change: %d %s, want 404 saying %q", what, filepath.Base(p), code, body, reason[p])
			}
		}
		// Similar images need only the stored vector, never the file.
		if code, body, _ := e.get(t, "/api/similar?id="+ids[p]); code != http.StatusOK {
			t.Errorf("similar images of %s after the change: %d %s, want 200", filepath.Base(p), code, body)
		}
	}
}

// pngHeader is a PNG whose header announces w x h pixels (no image data).
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	chunk := append([]byte("IHDR"), ihdr...)
	out := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}

func TestUpload(t *testing.T) {
	e := newEnv(t, nil)
	post := func(body []byte) (int, []byte) {
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/search/image?k=3", bytes.NewReader(body))
		code, b, _ := do(t, req)
		return code, b
	}
	// An indexed image is found by content; another is embedded.
	p := filepath.Join(e.dir, "noise_257x231.png")
	code, body := post(mustRead(t, p))
	var a Answer
	if code != 200 || json.Unmarshal(body, &a) != nil || a.Results[0].Path != p || a.Results[0].Score < 0.9999 {
		t.Fatalf("upload of an indexed image: %d %s", code, body)
	}
	var buf bytes.Buffer
	jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30)), nil)
	if code, body := post(buf.Bytes()); code != 200 || !contains(body, `"results":[{`) {
		t.Errorf("upload of a new image: %d %s", code, body)
	}
	for name, tc := range map[string]struct {
		body []byte
		code int
	}{
		"empty":                            {nil, 400},
		"not image":                        {[]byte("hello, world"), 400},
		"over 32 MB":                       {make([]byte, MaxUpload+1), 413},
		"20000x20000 header (pixel limit)": {pngHeader(20000, 20000), 413},
	} {
		if code, body := post(tc.body); code != tc.code {
			t.Errorf("upload %s: %d %s, want %d", name, code, body, tc.code)
		}
	}
}

func TestToken(t *testing.T) {
	if _, err := New(Options{DB: "x", Addr: "0.0.0.0:8080"}); !errors.Is(err, ErrNeedToken) {
		t.Errorf("non-loopback without token: %v", err)
	}
	e := newEnv(t, func(o *Options) { o.Token = "s3cret" })
	for _, path := range []string{"/", "/app.js", "/api/status", "/api/search?q=x", "/thumb/AAAAAAAAAAAAAAAA", "/?token=wrong"} {
		for _, host := range []string{e.ts.Listener.Addr().String(), "evil.example"} {
			if code, _, _ := e.get(t, path, "Host", host); code != http.StatusUnauthorized {
				t.Errorf("%s without token, Host %s: %d, want 401", path, host, code)
			}
		}
	}
	if code, _, _ := e.get(t, "/api/status", "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("Bearer: %d", code)
	}
	if code, _, _ := e.get(t, "/api/status?token=s3cret"); code != 401 {
		t.Errorf("?token= on the API: %d, want 401 (the URL carries it to the page only)", code)
	}
	code, _, h := e.get(t, "/?token=s3cret")
	c := h.Get("Set-Cookie")
	name := "clipidx_token_" + e.port()
	if code != 200 || !strings.HasPrefix(c, name+"=s3cret;") || !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") {
		t.Fatalf("page with token: %d, cookie %q, want %s", code, c, name)
	}
	if code, _, _ := e.get(t, "/api/status", "Cookie", name+"=s3cret"); code != 200 {
		t.Errorf("cookie: %d", code)
	}
}

// TestModelFailure: a model that cannot load is an error on the page and in
// the status, and similar images keep working.
func TestModelFailure(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.OpenModel = func() (Model, error) { return nil, errors.New("load model: no weights in /x (run clipidx model pull)") }
	})
	code, body, _ := e.get(t, "/api/search?q=cat")
	if code != 500 || !contains(body, "no weights in /x") {
		t.Errorf("search with a broken model: %d %s", code, body)
	}
	id := e.idOf2(t)
	if code, body, _ := e.get(t, "/api/similar?id="+id); code != 200 {
		t.Errorf("similar with a broken model: %d %s", code, body)
	}
	_, body, _ = e.get(t, "/api/status")
	if !contains(body, `"model_error":"load model: no weights`) {
		t.Errorf("status: %s", body)
	}
}

// idOf2 finds an id without the model: from the server's own id of a path.
func (e *env) idOf2(t *testing.T) string {
	return e.srv.ids.id(filepath.Join(e.dir, "wide_300x200.png"))
}

// blockingModel holds every text encode until release is closed.
type blockingModel struct {
	Model
	started chan struct{}
	release chan struct{}
}

func (b *blockingModel) EncodeTexts(texts []string) ([]float32, error) {
	b.started <- struct{}{}
	<-b.release
	return b.Model.EncodeTexts(texts)
}

func TestBusy(t *testing.T) {
	bm := &blockingModel{started: make(chan struct{}, 8), release: make(chan struct{})}
	e := newEnv(t, func(o *Options) {
		o.ModelRuns, o.MaxQueue = 1, 1
		o.OpenModel = func() (Model, error) { bm.Model = tiny(t); return bm, nil }
	})
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := e.get(t, "/api/search?q=cat")
			codes <- code
		}()
		if i == 0 {
			<-bm.started // the first runs; the second will queue
		}
	}
	// Wait until the second is queued, then a third is refused.
	deadline := time.Now().Add(5 * time.Second)
	for len(e.srv.wait) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	code, _, h := e.get(t, "/api/search?q=dog")
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("third search: %d Retry-After %q, want 503 with Retry-After", code, h.Get("Retry-After"))
	}
	close(bm.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("queued search: %d", c)
		}
	}
}

// TestMalformedQueryAndMethod: a query string that does not decode is
// named as such (not read as an empty query); a wrong method on an
// endpoint that exists is 405 with an Allow header, an unknown path 404.
func TestMalformedQueryAndMethod(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/api/search?q=%zz", "/api/search?q=cat&k=%zz", "/api/similar?id=%zz"} {
		code, body, _ := e.get(t, p)
		if code != http.StatusBadRequest || !contains(body, "malformed query string") {
			t.Errorf("GET %s: %d %s, want 400 malformed query string", p, code, body)
		}
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/api/search/image", "POST"},
		{"POST", "/api/search", "GET, HEAD"},
		{"DELETE", "/api/status", "GET, HEAD"},
		{"PUT", "/thumb/abc", "GET, HEAD"},
		{"POST", "/", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(tc.method, e.ts.URL+tc.path, nil)
		code, body, h := do(t, req)
		if code != http.StatusMethodNotAllowed || h.Get("Allow") != tc.allow || !contains(body, tc.method) {
			t.Errorf("%s %s: %d, Allow %q, %s; want 405, Allow %q", tc.method, tc.path, code, h.Get("Allow"), body, tc.allow)
		}
	}
	if code, _, h := e.get(t, "/api/nothing"); code != http.StatusNotFound || h.Get("Allow") != "" {
		t.Errorf("GET /api/nothing: %d, want 404", code)
	}
}

// TestGoneAway: the 404 of a file whose folder is away (its disk
// unplugged: the last build kept its records offline) says so, not that
// the file was removed; a permission error says that.
func TestGoneAway(t *testing.T) {
	e := newEnv(t, nil)
	p := filepath.Join(e.dir, "gray_260x200.png")
	id := e.idOf(t, p)
	unplugged := e.dir + ".unplugged"
	if err := os.Rename(e.dir, unplugged); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(unplugged, e.dir) })
	build(t, e.db, index.Options{}, e.dir)
	for _, what := range []string{"/thumb/", "/image/"} {
		code, body, _ := e.get(t, what+id)
		if code != http.StatusNotFound || !strings.Contains(string(body), "folder is away") || strings.Contains(string(body), "/") {
			t.Errorf("%s of a file on a disk that is away: %d %s, want 404 saying its folder is away", what, code, body)
		}
	}
	if err := missing(nil, p, &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES}); err != errDenied {
		t.Errorf("a file that cannot be opened for its permissions: %v, want %v", err, errDenied)
	}
}

// TestUnderThroughLink: under= finds the files of a folder named through
// a symbolic link to it, and under its real path when the index was built
// through a link, as `search --under` does. (Once the web took the path
// only as the index spelled it, and found nothing.)
func TestUnderThroughLink(t *testing.T) {
	e := newEnv(t, nil)
	all := e.search(t, "/api/search?k=100&q=x")
	if len(all.Results) == 0 {
		t.Fatal("no results at all")
	}
	link := filepath.Join(t.TempDir(), "shortcut")
	if err := os.Symlink(e.dir, link); err != nil {
		t.Fatal(err)
	}
	if a := e.search(t, "/api/search?k=100&q=x&under="+url.QueryEscape(link)); len(a.Results) != len(all.Results) {
		t.Errorf("under a link to the indexed folder: %d results, want %d", len(a.Results), len(all.Results))
	}
	// The index built through the link: its real path finds them.
	e2 := &env{dir: link, db: filepath.Join(t.TempDir(), "index.db")}
	build(t, e2.db, index.Options{}, link)
	e2.start(t, nil)
	if a := e2.search(t, "/api/search?k=100&q=x&under="+url.QueryEscape(e.dir)); len(a.Results) != len(all.Results) {
		t.Errorf("under the real folder of a root given as a link: %d results, want %d", len(a.Results), len(all.Results))
	}
	if a := e2.search(t, "/api/search?k=100&q=x&under="+url.QueryEscape(filepath.Join(t.TempDir(), "elsewhere"))); len(a.Results) != 0 {
		t.Errorf("under another folder: %d results, want none", len(a.Results))
	}
}

// TestDamagedVector: a vector damaged on disk (a flipped bit) scored about
// 1000 against queries near its photo: first of every search by that
// photo, and the query of similar images and of an upload of the same
// file. Now similar images of it is a 500 naming the damage, an upload is
// embedded by the model, and searches leave the vector out and tell
// Options.Damaged.
func TestDamagedVector(t *testing.T) {
	var mu sync.Mutex
	var told []string
	e := newEnv(t, func(o *Options) {
		o.Damaged = func(paths []string) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, paths...)
		}
	})
	p := filepath.Join(e.dir, "wide_300x200.png")
	id := e.idOf(t, p)
	damage.Vector(t, e.db, p)
	if code, body, _ := e.get(t, "/api/similar?id="+id); code != http.StatusInternalServerError || !contains(body, "damaged") {
		t.Errorf("similar to the damaged photo: %d %s, want 500 naming the damage", code, body)
	}
	req, err := http.NewRequest("POST", e.ts.URL+"/api/search/image?k=10", bytes.NewReader(mustRead(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := do(t, req)
	var a Answer
	if code != 200 || json.Unmarshal(body, &a) != nil || len(a.Results) == 0 {
		t.Fatalf("upload of the damaged photo: %d %s", code, body)
	}
	for _, r := range a.Results {
		if r.Path == p || r.Score > 1.001 {
			t.Errorf("upload of the damaged photo: result %s scored %v", r.Path, r.Score)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(told, p) {
		t.Errorf("Damaged told %q, want %s", told, p)
	}
}

// TestIDsAfterIndexMovedInDuringRead: an index moved onto the served path
// (merge's replace, or mv) between a request's snapshot and its stat of the
// path stamped the id map built from the old index with the new file's
// size and time: every file the new index added answered 404, for good.
func TestIDsAfterIndexMovedInDuringRead(t *testing.T) {
	e := newEnv(t, nil)
	extra := filepath.Join(e.dir, "extra.png")
	copyFile(t, filepath.Join(e.dir, "wide_300x200.png"), extra)
	next := filepath.Join(t.TempDir(), "next.db")
	copyFile(t, e.db, next)
	build(t, next, index.Options{}, e.dir) // the old index's files and extra.png
	id := e.srv.ids.id(extra)
	rd, err := store.OpenReader(e.db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = rd.View(func(s *store.Snapshot) error {
		if err := os.Rename(next, e.db); err != nil { // while this request reads the old one
			return err
		}
		if _, err := e.srv.ids.lookup(e.db, s, id); !errors.Is(err, errGone) {
			t.Errorf("extra.png in the old index: %v, want errGone", err)
		}
		return nil
	})
	if err := errors.Join(err, rd.Close()); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.get(t, "/thumb/"+id); code != http.StatusOK {
		t.Errorf("thumbnail of a file the index moved in holds: %d, want 200", code)
	}
}

// TestNoIndexAndOtherModel: with the index removed under the server, a
// search or a thumbnail answered 500, as did a text search on an index of
// another model: the server had not failed. Now 503 (with Retry-After)
// and 409.
func TestNoIndexAndOtherModel(t *testing.T) {
	e := newEnv(t, nil)
	id := e.idOf(t, filepath.Join(e.dir, "wide_300x200.png"))
	other := filepath.Join(t.TempDir(), "other.db")
	w, err := store.OpenWriter(other, store.Identity{Model: "another", Dim: 32, Preprocess: "x"}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := os.Rename(other, e.db); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := e.get(t, "/api/search?q=a+photo"); code != http.StatusConflict {
		t.Errorf("text search on another model's index: %d %s, want 409", code, body)
	}
	if err := os.Remove(e.db); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/search?q=a+photo", "/thumb/" + id} {
		if code, body, h := e.get(t, p); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Errorf("%s with no index: %d %s, want 503 with Retry-After", p, code, body)
		}
	}
}
