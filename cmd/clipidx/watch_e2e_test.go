package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/video/videotest"
	"github.com/clipidx/clipidx/store"
)

// e2eWait bounds each wait for the watcher in real time: generous, since
// the machine may be busy; a pass takes well under a second.
const e2eWait = 60 * time.Second

// copyFile copies src to dst (created with its folders).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// statusOf runs status --json.
func statusOf(t *testing.T, bin string, g []string) statusJSON {
	t.Helper()
	out, errs, code := e2eRun(t, bin, append(g, "status", "--json")...)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json %q: %v", out, err)
	}
	return st
}

// `clipidx watch` on real files: the first build, then a new folder, a
// rename and a deletion reach the index through its batches (one JSON
// line each); a manual build meanwhile neither fails nor embeds again;
// SIGTERM stops it with a consistent index.
func TestWatchEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos, db := filepath.Join(root, "photos"), filepath.Join(root, "index.db")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(photos)
	n := len(entries)
	g := []string{"--db", db, "--model", model, "--device", "cpu"}
	cmd, stderr, next := startWatch(t, bin, g, photos)
	defer cmd.Process.Kill()
	if l := next("first build"); l.Changed != 0 || l.Added != n {
		t.Fatalf("first build: %+v, want a full build adding %d", l, n)
	}

	// Changes: a new folder of copies (reused, no model run), a new
	// distinct image, a video, a rename, a deletion.
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	videotest.Cuts(t, videotest.Tools(t), clip, "160x120", 2, "red", "blue")
	copyFile(t, clip, filepath.Join(photos, "new", "clip.mp4"))
	copyFile(t, filepath.Join(photos, "checker_320x240.png"), filepath.Join(photos, "new", "a.png"))
	copyFile(t, filepath.Join(photos, "gradient_256.png"), filepath.Join(photos, "new", "deep", "b.png"))
	if err := os.Rename(filepath.Join(photos, "wide_300x200.png"), filepath.Join(photos, "wide.png")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(photos, "tiny_50x30.png"))
	want := n + 1 // +2 copies, -1 deleted
	deadline := time.Now().Add(e2eWait)
	for {
		l := next("changes")
		if l.Changed == 0 {
			t.Errorf("a full build (%+v) where events should have led to a partial one", l)
		}
		if st := statusOf(t, bin, g); st.Videos == 1 && st.Frames > 0 && st.Images == want+st.Frames {
			want += st.Frames // frames are counted in images
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index never reached %d images and the video's frames: %+v", want, statusOf(t, bin, g))
		}
	}
	st := statusOf(t, bin, g)
	if st.Build.Running || st.Build.Progress == nil || st.Build.Progress.Phase != "done" {
		t.Errorf("status after the batches: %+v, want no build running, the last one done", st.Build)
	}

	// A manual build while the watcher runs: it succeeds and finds
	// everything done.
	out, errs, code := e2eRun(t, bin, append(g, "build", "--json", photos)...)
	var b buildJSON
	json.Unmarshal([]byte(out), &b)
	if files := n + 2; code != 0 || b.Unchanged != files || b.Added+b.Updated+b.Reused+b.Removed != 0 { // the video is one file
		t.Errorf("manual build during watch: exit %d, %+v, %s; want %d unchanged", code, b, errs, files)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(stderr.String(), "stopped: finished work is saved") {
			t.Errorf("watch after SIGTERM: %v, stderr %s", err, stderr.String())
		}
	case <-time.After(e2eWait):
		t.Fatal("watch did not stop after SIGTERM")
	}
	if _, errs, code := e2eRun(t, bin, append(g, "status", "--check")...); code != 0 {
		t.Errorf("status --check after the watcher: %d %s", code, errs)
	}
	if h, ok := store.BuildHolder(db); ok {
		t.Errorf("the lock file still names %v", h)
	}
}

// status and /api/status, in other processes, show a running build's
// progress and who runs it; nothing once it is gone.
func TestStatusShowsRunningBuild(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root, photos, db, g := builtPhotos(t, bin, model)
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var id store.Identity
	r.View(func(s *store.Snapshot) error { id = s.Identity(); return nil })
	r.Close()

	// This process is the running build, at a known point.
	w, err := store.OpenWriter(db, id, store.WriterOptions{Command: "clipidx watch " + photos})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteProgress(store.Progress{Phase: "index", Found: 500, Total: 500, Done: 37, Failed: 2, Rate: 4, ETA: 115.75, Root: photos}); err != nil {
		t.Fatal(err)
	}
	out, errs, code := e2eRun(t, bin, append(g, "status")...)
	wantLine := fmt.Sprintf("building:    indexing 37 of 500 new or changed files (2 failed), 4.0 files/s, 1m56s left, in %s, by pid %d", photos, os.Getpid())
	if code != 0 || !strings.Contains(out, wantLine) || !strings.Contains(out, "(clipidx watch "+photos+")") {
		t.Errorf("status during a build: exit %d %s\n%s\nwant the line %q", code, errs, out, wantLine)
	}
	if st := statusOf(t, bin, g); !st.Build.Running || st.Build.Progress == nil || st.Build.Progress.Done != 37 || st.Build.Holder.PID != os.Getpid() {
		t.Errorf("status --json during a build: %+v", st.Build)
	}

	// /api/status from a server in another process.
	srv := exec.Command(bin, append(g, "serve", "--addr", "127.0.0.1:0")...)
	srv.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(root, "cache"))
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	f := strings.Fields(line)
	u, err := url.Parse(f[len(f)-1])
	if err != nil {
		t.Fatalf("serve printed %q", line)
	}
	apiStatus := func() map[string]any {
		t.Helper()
		resp, err := (&http.Client{Timeout: e2eWait}).Get("http://" + u.Host + "/api/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("/api/status %s: %v", body, err)
		}
		return m
	}
	b, _ := apiStatus()["build"].(map[string]any)
	p, _ := b["progress"].(map[string]any)
	if b["running"] != true || p["done"] != 37.0 || p["total"] != 500.0 || p["phase"] != "index" {
		t.Errorf("/api/status build during a build: %v", b)
	}

	// The build ends: nothing runs.
	w.Close()
	if out, _, _ := e2eRun(t, bin, append(g, "status")...); strings.Contains(out, "building:") {
		t.Errorf("status after the build still shows it:\n%s", out)
	}
	if b, _ := apiStatus()["build"].(map[string]any); b["running"] != false {
		t.Errorf("/api/status after the build: %v", b)
	}
}

// startWatch starts `clipidx watch --json --settle 200ms` of roots with the
// global flags g, and returns it, its stderr as written so far, and next,
// which waits for its next build line (what names the wait in a failure;
// a build error fails the test).
func startWatch(t *testing.T, bin string, g []string, roots ...string) (*exec.Cmd, *lockedBuffer, func(what string) watchLine) {
	t.Helper()
	cmd := exec.Command(bin, append(append(g, "watch", "--json", "--settle", "200ms"), roots...)...)
	cmd.Env = append(os.Environ(), "CLIPIDX_MODEL=", "CLIPIDX_DB=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan watchLine, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l watchLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("watch --json line %q: %v", sc.Text(), err)
			}
			lines <- l
		}
		close(lines)
	}()
	next := func(what string) watchLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: watch ended: %s", what, stderr.String())
			}
			if l.Error != "" {
				t.Fatalf("%s: build error %s", what, l.Error)
			}
			return l
		case <-time.After(e2eWait):
			t.Fatalf("%s: no build within %v: %s", what, e2eWait, stderr.String())
		}
		panic("unreachable")
	}
	return cmd, stderr, next
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
