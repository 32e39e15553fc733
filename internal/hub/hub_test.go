package hub_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/hub"
	"github.com/clipidx/clipidx/internal/hub/hubtest"
)

const repo = "laion/CLIP-tiny-test"

// newHub serves a repository shaped like a CLIP checkpoint: small JSON/text
// files served by the hub, and a 300 KB LFS "model.safetensors" redirected
// to the CDN. It also makes stalls manual for the test (hub.ManualStalls):
// a transfer never times out because the machine is busy, so the request
// counts the tests assert do not depend on timing.
func newHub(t *testing.T) (*hubtest.Server, map[string]hubtest.File) {
	t.Helper()
	hub.ManualStalls(t)
	files := map[string]hubtest.File{
		"config.json":       {Data: []byte(`{"projection_dim": 1024}` + "\n")},
		"vocab.json":        {Data: bytes.Repeat([]byte(`"a</w>": 1, `), 2000)},
		"merges.txt":        {Data: []byte("#version: 0.2\na b\n")},
		"model.safetensors": {Data: hubtest.Random(300_000, 1), LFS: true},
	}
	return hubtest.New(t, repo, files), files
}

func names(files map[string]hubtest.File) []string {
	return []string{"config.json", "vocab.json", "merges.txt", "model.safetensors"}
}

// quick makes retries immediate so that tests stay fast.
func quick(s *hubtest.Server) hub.Options {
	return hub.Options{Endpoint: s.Endpoint(), Backoff: time.Millisecond}
}

func checkFiles(t *testing.T, dir string, files map[string]hubtest.File, which ...string) {
	t.Helper()
	for _, name := range which {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, files[name].Data) {
			t.Errorf("%s: content differs (%d bytes, want %d)", name, len(got), len(files[name].Data))
		}
		if _, err := os.Stat(filepath.Join(dir, name+".part")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s.part left behind (stat: %v)", name, err)
		}
	}
}

// gets counts the GETs that carry file bodies: on the CDN for LFS files,
// on the hub for the others.
func gets(reqs []hubtest.Request, lfs bool) (n int, ranges []string) {
	server := "hub"
	if lfs {
		server = "cdn"
	}
	for _, r := range reqs {
		if r.Method == "GET" && r.Server == server {
			n++
			if r.Range != "" {
				ranges = append(ranges, r.Range)
			}
		}
	}
	return n, ranges
}

func TestDownloadAll(t *testing.T) {
	s, files := newHub(t)
	s.Token = "hf_secret"
	opts := quick(s)
	opts.Token = s.Token
	dir := t.TempDir()
	var last hub.Progress
	opts.Progress = func(p hub.Progress) {
		if p.Done > p.Total && p.Total >= 0 {
			t.Errorf("progress %+v: done beyond total", p)
		}
		last = p
	}
	res, err := hub.Download(context.Background(), repo, names(files), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files, names(files)...)
	if last.File != "model.safetensors" || last.Stage != hub.StageDone || last.Done != 300_000 {
		t.Errorf("last progress %+v, want model.safetensors done at 300000", last)
	}
	for _, r := range res {
		if r.Skipped || r.Size != int64(len(files[r.File].Data)) || r.Commit != s.Commit {
			t.Errorf("%+v", r)
		}
		wantSHA := ""
		if files[r.File].LFS {
			wantSHA = hubtest.SHA256(files[r.File].Data)
		}
		if r.SHA256 != wantSHA {
			t.Errorf("%s: SHA256 %q, want %q (only LFS files have one)", r.File, r.SHA256, wantSHA)
		}
	}
	// The token goes to the hub, never to the CDN, although both listen on
	// 127.0.0.1 (net/http alone would forward it: it ignores the port).
	var hubAuth, cdn int
	for _, r := range s.Requests() {
		switch r.Server {
		case "hub":
			if r.Authorization == "Bearer hf_secret" {
				hubAuth++
			}
		case "cdn":
			cdn++
			if r.Authorization != "" {
				t.Errorf("CDN request %s got Authorization %q", r.Path, r.Authorization)
			}
		}
	}
	if cdn != 1 || hubAuth != len(s.Requests())-cdn {
		t.Errorf("requests %+v: want every hub request authorized and one CDN GET", s.Requests())
	}
}

func TestSkipVerified(t *testing.T) {
	s, files := newHub(t)
	dir := t.TempDir()
	opts := quick(s)
	if _, err := hub.Download(context.Background(), repo, names(files), dir, opts); err != nil {
		t.Fatal(err)
	}

	s.ClearRequests()
	res, err := hub.Download(context.Background(), repo, names(files), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.Skipped {
			t.Errorf("%s downloaded again", r.File)
		}
	}
	if n := len(s.Requests()); n != len(res) {
		t.Errorf("%d requests for %d files already verified, want one HEAD each", n, len(res))
	}

	// A changed file on the hub (new ETag) is fetched again.
	s.Files["config.json"] = hubtest.File{Data: []byte(`{"projection_dim": 768}`)}
	files["config.json"] = s.Files["config.json"]
	r, err := hub.DownloadFile(context.Background(), repo, "config.json", dir, opts)
	if err != nil || r.Skipped {
		t.Fatalf("changed file: %+v, %v", r, err)
	}
	checkFiles(t, dir, files, "config.json")

	// An LFS file copied in by hand (no sidecar) is hashed, not fetched.
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, "model.safetensors"), files["model.safetensors"].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	s.ClearRequests()
	r, err = hub.DownloadFile(context.Background(), repo, "model.safetensors", dir2, opts)
	if err != nil || !r.Skipped {
		t.Errorf("hand-copied LFS file: %+v, %v", r, err)
	}
	if n, _ := gets(s.Requests(), true); n != 0 {
		t.Errorf("%d GETs for a file whose SHA-256 matches", n)
	}

	// The same with one byte changed is replaced.
	bad := bytes.Clone(files["model.safetensors"].Data)
	bad[7] ^= 1
	if err := os.WriteFile(filepath.Join(dir2, "model.safetensors"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err = hub.DownloadFile(context.Background(), repo, "model.safetensors", dir2, opts); err != nil || r.Skipped {
		t.Errorf("damaged LFS file: %+v, %v", r, err)
	}
	checkFiles(t, dir2, files, "model.safetensors")
}

func TestResumeAfterCut(t *testing.T) {
	tests := []struct {
		name        string
		file        string
		cuts        []int64
		ignoreRange bool
		wantRanges  []string
	}{
		{"lfs one cut", "model.safetensors", []int64{100_000}, false, []string{"bytes=100000-"}},
		{"lfs two cuts", "model.safetensors", []int64{70_000, 50_000}, false, []string{"bytes=70000-", "bytes=120000-"}},
		{"lfs cut before any byte", "model.safetensors", []int64{0}, false, nil},
		{"small file cut", "vocab.json", []int64{5000}, false, []string{"bytes=5000-"}},
		{"server ignores range", "model.safetensors", []int64{100_000}, true, []string{"bytes=100000-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, files := newHub(t)
			s.CutNext(tt.file, tt.cuts...)
			s.IgnoreRange(tt.ignoreRange)
			dir := t.TempDir()
			r, err := hub.DownloadFile(context.Background(), repo, tt.file, dir, quick(s))
			if err != nil {
				t.Fatal(err)
			}
			checkFiles(t, dir, files, tt.file)
			n, ranges := gets(s.Requests(), files[tt.file].LFS)
			if n != len(tt.cuts)+1 || strings.Join(ranges, ",") != strings.Join(tt.wantRanges, ",") {
				t.Errorf("%d GETs with ranges %q, want %d with %q", n, ranges, len(tt.cuts)+1, tt.wantRanges)
			}
			want := int64(len(files[tt.file].Data)) // resumed: each byte once
			if tt.ignoreRange {
				want = int64(len(files[tt.file].Data)) + tt.cuts[0]
			}
			if r.Fetched != want {
				t.Errorf("fetched %d bytes, want %d", r.Fetched, want)
			}
		})
	}
}

func TestResumeEarlierPart(t *testing.T) {
	s, files := newHub(t)
	data := files["model.safetensors"].Data
	dir := t.TempDir()
	opts := quick(s)

	// Interrupt a first run from the progress hook (as Ctrl-C would).
	ctx, cancel := context.WithCancel(context.Background())
	opts.Progress = func(p hub.Progress) {
		if p.Stage == hub.StageDownloading && p.Done >= 120_000 {
			cancel()
		}
	}
	_, err := hub.DownloadFile(ctx, repo, "model.safetensors", dir, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an interrupted download left the target file (stat: %v)", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "model.safetensors.part"))
	if err != nil || fi.Size() < 120_000 || fi.Size() >= int64(len(data)) {
		t.Fatalf("part after interruption: %v, %v", fi, err)
	}

	// The next run resumes where the part ends.
	s.ClearRequests()
	opts.Progress = nil
	r, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files, "model.safetensors")
	if r.Resumed != fi.Size() || r.Fetched != int64(len(data))-fi.Size() {
		t.Errorf("resumed from %d fetching %d, want from %d", r.Resumed, r.Fetched, fi.Size())
	}
	if _, ranges := gets(s.Requests(), true); len(ranges) != 1 {
		t.Errorf("ranges %q, want one", ranges)
	}
}

func TestStalePartDiscarded(t *testing.T) {
	s, files := newHub(t)
	dir := t.TempDir()
	// A part left by a download of another version (its record names
	// another ETag) is not resumed.
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.part"), hubtest.Random(1000, 9), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".hub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".hub", "model.safetensors.part.json"), []byte(`{"etag":"0000"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
	if err != nil || r.Resumed != 0 {
		t.Fatalf("%+v, %v", r, err)
	}
	checkFiles(t, dir, files, "model.safetensors")
}

func TestChecksumMismatch(t *testing.T) {
	s, files := newHub(t)
	dir := t.TempDir()
	s.Corrupt("model.safetensors", true)
	_, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
	if !errors.Is(err, hub.ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), hubtest.SHA256(files["model.safetensors"].Data)) {
		t.Errorf("error %q should name the file and the advertised SHA-256", err)
	}
	for _, p := range []string{"model.safetensors", "model.safetensors.part", ".hub/model.safetensors.part.json", ".hub/model.safetensors.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a checksum mismatch (stat: %v)", p, err)
		}
	}
	// Once the CDN is fixed, the next run succeeds from scratch.
	s.Corrupt("model.safetensors", false)
	r, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
	if err != nil || r.Resumed != 0 {
		t.Fatalf("%+v, %v", r, err)
	}
	checkFiles(t, dir, files, "model.safetensors")
}

func TestCorruptPartResumed(t *testing.T) {
	// A part whose bytes went bad on disk is caught by the SHA-256 after
	// resuming, and deleted.
	s, files := newHub(t)
	dir := t.TempDir()
	s.CutNext("model.safetensors", 100_000)
	opts := quick(s)
	opts.Attempts = 1
	if _, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, opts); err == nil {
		t.Fatal("a cut with Attempts=1 succeeded")
	}
	part := filepath.Join(dir, "model.safetensors.part")
	b, err := os.ReadFile(part)
	if err != nil || len(b) != 100_000 {
		t.Fatalf("part: %d bytes, %v", len(b), err)
	}
	b[10] ^= 1
	if err := os.WriteFile(part, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
	if !errors.Is(err, hub.ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("corrupt part kept (stat: %v)", err)
	}
	if _, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s)); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files, "model.safetensors")
}

// TestStallRetried: the CDN sends 50,000 bytes and hangs; once the client
// holds them all, the stall timer fires (by hand: see newHub), and the
// download resumes at byte 50,000.
func TestStallRetried(t *testing.T) {
	s, files := newHub(t)
	stall := hub.ManualStalls(t)
	dir := t.TempDir()
	s.StallNext("model.safetensors", 50_000)
	opts := quick(s)
	var retries []error
	opts.OnRetry = func(_ string, err error, _ time.Duration) { retries = append(retries, err) }
	fired := false
	opts.Progress = func(p hub.Progress) {
		if !fired && p.Stage == hub.StageDownloading && p.Done == 50_000 {
			fired = true
			if n := stall(); n != 1 {
				t.Errorf("%d transfers stalled, want 1", n)
			}
		}
	}
	if _, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, opts); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files, "model.safetensors")
	if _, ranges := gets(s.Requests(), true); len(ranges) != 1 || ranges[0] != "bytes=50000-" {
		t.Errorf("ranges %q, want a resume at 50000", ranges)
	}
	if len(retries) != 1 || !strings.Contains(retries[0].Error(), "no data for") {
		t.Errorf("retried after %v, want one stall", retries)
	}
}

// TestStallTimeout: the real clock ends a transfer whose server hangs. The
// hang never ends, so however busy the machine, the outcome is a stall
// error (no count of bytes or requests is asserted).
func TestStallTimeout(t *testing.T) {
	s := hubtest.New(t, repo, map[string]hubtest.File{"model.safetensors": {Data: hubtest.Random(100_000, 3), LFS: true}})
	s.StallNext("model.safetensors", 20_000)
	opts := quick(s)
	opts.StallTimeout, opts.Attempts = 50*time.Millisecond, 1
	// Only a stall timer that never fires meets this bound.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := hub.DownloadFile(ctx, repo, "model.safetensors", t.TempDir(), opts)
	if err == nil || !strings.Contains(err.Error(), "no data for 50ms") {
		t.Fatalf("err = %v, want a stall after 50ms", err)
	}
}

func TestGiveUp(t *testing.T) {
	s, _ := newHub(t)
	dir := t.TempDir()
	s.CutNext("model.safetensors", 0, 0, 0, 0)
	opts := quick(s)
	opts.Attempts = 3
	_, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, opts)
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("err = %v, want giving up after 3 attempts", err)
	}
	if n, _ := gets(s.Requests(), true); n != 3 {
		t.Errorf("%d GETs, want 3", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target exists after failing (stat: %v)", err)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name      string
		token     string // the server's; the client sends none
		repo      string
		revision  string
		file      string
		want      error
		wantInMsg []string
	}{
		{"gated", "hf_x", repo, "", "config.json", hub.ErrUnauthorized, []string{repo, "config.json", "401", "token"}},
		{"missing repo", "", "laion/no-such-repo", "", "config.json", hub.ErrUnauthorized, []string{"laion/no-such-repo", "Repository Not Found"}},
		{"missing file", "", repo, "", "pytorch_model.bin", hub.ErrNotFound, []string{repo, "pytorch_model.bin", "404"}},
		{"missing revision", "", repo, "v9", "config.json", hub.ErrNotFound, []string{"@v9", "Invalid rev id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newHub(t)
			s.Token = tt.token
			dir := t.TempDir()
			opts := quick(s)
			opts.Revision = tt.revision
			_, err := hub.DownloadFile(context.Background(), tt.repo, tt.file, dir, opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			for _, w := range tt.wantInMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
				t.Errorf("files left after an HTTP error: %v (%v)", left, err)
			}
			if len(s.Requests()) != 1 {
				t.Errorf("%d requests, want 1 (no retry of a client error)", len(s.Requests()))
			}
		})
	}
}

func TestEndpointWithPathAndRename(t *testing.T) {
	s, files := newHub(t)
	s.Prefix = "/mirror/hf"
	s.Token = "tok"
	s.Renamed = map[string]string{"laion/old-name": repo}
	dir := t.TempDir()
	opts := quick(s)
	opts.Token = "tok"
	opts.Endpoint = s.Endpoint() + "/" // a trailing slash is tolerated
	if _, err := hub.Download(context.Background(), "laion/old-name", []string{"config.json", "model.safetensors"}, dir, opts); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files, "config.json", "model.safetensors")
	for _, r := range s.Requests() {
		if r.Server == "hub" && (!strings.HasPrefix(r.Path, "/mirror/hf/laion/") || r.Authorization != "Bearer tok") {
			t.Errorf("hub request %+v: want the prefix and the token (same-host redirects keep it)", r)
		}
	}
}

func TestFileURL(t *testing.T) {
	tests := []struct{ endpoint, repo, rev, file, want string }{
		{"", repo, "", "config.json", "https://huggingface.co/" + repo + "/resolve/main/config.json"},
		{"https://hf-mirror.com/", repo, "refs/pr/1", "config.json", "https://hf-mirror.com/" + repo + "/resolve/refs%2Fpr%2F1/config.json"},
		{"http://h:8080/a/b", "org/m", "v1.0", "onnx/model file.onnx", "http://h:8080/a/b/org/m/resolve/v1.0/onnx/model%20file.onnx"},
	}
	for _, tt := range tests {
		if got := hub.FileURL(tt.endpoint, tt.repo, tt.rev, tt.file); got != tt.want {
			t.Errorf("FileURL(%q, %q, %q, %q) = %q, want %q", tt.endpoint, tt.repo, tt.rev, tt.file, got, tt.want)
		}
	}
}

func TestBadNames(t *testing.T) {
	for _, tt := range []struct{ repo, file string }{
		{"", "config.json"}, {"a/b/c", "config.json"}, {"../x", "config.json"}, {"a/b?c", "config.json"},
		{repo, ""}, {repo, "/etc/passwd"}, {repo, "../config.json"}, {repo, "a/../../b"}, {repo, "x.part"}, {repo, ".hub/x"},
	} {
		_, err := hub.DownloadFile(context.Background(), tt.repo, tt.file, t.TempDir(), hub.Options{Endpoint: "http://127.0.0.1:1"})
		if !errors.Is(err, hub.ErrBadName) {
			t.Errorf("repo %q file %q: err = %v, want ErrBadName", tt.repo, tt.file, err)
		}
	}
}

func TestVerifyOption(t *testing.T) {
	s, files := newHub(t)
	dir := t.TempDir()
	if _, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s)); err != nil {
		t.Fatal(err)
	}
	// Damage the file behind the sidecar's back, keeping size and mtime.
	p := filepath.Join(dir, "model.safetensors")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(files["model.safetensors"].Data)
	bad[1] ^= 1
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	r, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
	if err != nil || !r.Skipped {
		t.Fatalf("without Verify the sidecar is trusted: %+v, %v", r, err)
	}
	opts := quick(s)
	opts.Verify = true
	if r, err = hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, opts); err != nil || r.Skipped {
		t.Fatalf("with Verify: %+v, %v", r, err)
	}
	checkFiles(t, dir, files, "model.safetensors")
}

func TestCompletePartRenamed(t *testing.T) {
	// A part that already holds every byte (interrupted before the rename)
	// is verified and renamed without fetching.
	s, files := newHub(t)
	dir := t.TempDir()
	data := files["model.safetensors"].Data
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.part"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".hub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := `{"etag":"` + hubtest.SHA256(data) + `"}`
	if err := os.WriteFile(filepath.Join(dir, ".hub", "model.safetensors.part.json"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
	if err != nil || r.Fetched != 0 || r.Resumed != int64(len(data)) {
		t.Fatalf("%+v, %v", r, err)
	}
	checkFiles(t, dir, files, "model.safetensors")
	if n, _ := gets(s.Requests(), true); n != 0 {
		t.Errorf("%d GETs for a complete part", n)
	}
}

func TestBusy(t *testing.T) {
	s, files := newHub(t)
	dir := t.TempDir()
	// Hold the file's lock from inside the progress hook of a first
	// download while a second one starts.
	var inner error
	opts := quick(s)
	opts.Progress = func(p hub.Progress) {
		if inner == nil && p.Stage == hub.StageDownloading && p.Done > 0 {
			_, inner = hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, quick(s))
			if inner == nil {
				inner = errors.New("second download succeeded")
			}
		}
	}
	if _, err := hub.DownloadFile(context.Background(), repo, "model.safetensors", dir, opts); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, hub.ErrBusy) {
		t.Errorf("concurrent download: %v, want ErrBusy", inner)
	}
	checkFiles(t, dir, files, "model.safetensors")
}
