//go:build unix

package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/store"
)

// writeForgotten writes an index of n records at path, half under /keep
// and half under /gone with metadata, and forgets /gone: the file keeps
// the pages the forgotten half took.
func writeForgotten(t *testing.T, path string, n int) {
	t.Helper()
	w, err := store.OpenWriter(path, mergeTestID, store.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 2000 {
		var b store.Batch
		for i := lo; i < min(lo+2000, n); i++ {
			p := fmt.Sprintf("/%s/%06d-%s.jpg", []string{"keep", "gone"}[i%2], i, strings.Repeat("x", 40))
			v := make([]float32, mergeTestID.Dim)
			for j := range v {
				v[j] = float32((i*7+j*3)%11) - 5
			}
			v[i%len(v)] += 20
			b.Put(p, store.File{Size: 9, MtimeNs: int64(i), Hash: sha256.Sum256([]byte(p))}, v)
			b.PutMeta(p, store.Meta{Make: "Cam", Model: fmt.Sprint("M", i%4), Taken: int64(i), TakenSource: store.TakenEXIF})
		}
		if err := w.Commit(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(store.LastBuild{Roots: []string{"/keep", "/gone"}, Complete: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Forget(path, []string{"/gone"}, store.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// indexState is what a reader of the index at path sees: identity,
// counters, every record with its vector and metadata, and whether the
// metadata column is current.
type indexState struct {
	ID      store.Identity
	Stats   store.Stats
	Files   map[string]store.File
	Vectors map[string][]float32
	Meta    map[string]store.Meta
	Column  bool
}

func stateOf(t *testing.T, r *store.Reader) indexState {
	t.Helper()
	st := indexState{Files: map[string]store.File{}, Vectors: map[string][]float32{}, Meta: map[string]store.Meta{}}
	err := r.View(func(s *store.Snapshot) error {
		st.ID = s.Identity()
		var err error
		if st.Stats, err = s.Stats(); err != nil {
			return err
		}
		st.Stats.Bytes = 0 // the file's size: what compact changes
		col, err := s.MetaColumn()
		st.Column = col != nil && err == nil
		err = s.Files("", func(p string, f store.File) error {
			st.Files[p] = f
			if !f.Failed() {
				st.Vectors[p] = append([]float32(nil), s.Vector(f.Vec)...)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return s.EachMeta(func(p string, m store.Meta) error { st.Meta[p] = m; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func readState(t *testing.T, path string) indexState {
	t.Helper()
	r, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return stateOf(t, r)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestCompactEndToEnd: after forget the index kept its size for ever.
// status now says how much compact would give back; compact gives it
// back, says how much (--json too), and the index reads as before.
func TestCompactEndToEnd(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "index.db")
	writeForgotten(t, db, 20000)
	was := readState(t, db)
	if !was.Column {
		t.Fatal("the fixture has no current metadata column")
	}
	size := fileSize(t, db)

	out, errs, code := e2eRun(t, bin, "--db", db, "status")
	if code != 0 || !strings.Contains(out, "\nfree space:  ") || !strings.Contains(out, "(clipidx compact gives it back)") {
		t.Errorf("status of an index half forgotten: exit %d\n%s%s", code, out, errs)
	}
	var st struct {
		DBBytes   int64 `json:"db_bytes"`
		FreeBytes int64 `json:"free_bytes"`
	}
	out, errs, code = e2eRun(t, bin, "--db", db, "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.FreeBytes <= size/4 || st.DBBytes != size {
		t.Errorf("status --json: exit %d, %+v (%v), file of %d bytes\n%s", code, st, err, size, errs)
	}

	out, errs, code = e2eRun(t, bin, "--db", db, "compact")
	after := fileSize(t, db)
	want := fmt.Sprintf("compacted %s: %s → %s (%s freed)\n", db, humanBytes(size), humanBytes(after), humanBytes(size-after))
	if code != 0 || out != want {
		t.Errorf("compact: exit %d, said %q, want %q\n%s", code, out, want, errs)
	}
	if after > size-st.FreeBytes/2 {
		t.Errorf("compact of %d bytes, %d free, left %d", size, st.FreeBytes, after)
	}
	if now := readState(t, db); !reflect.DeepEqual(now, was) {
		t.Errorf("the index reads otherwise after compact (column current: %v, was %v; %d records, was %d)", now.Column, was.Column, len(now.Files), len(was.Files))
	}
	out, errs, code = e2eRun(t, bin, "--db", db, "status")
	if code != 0 || strings.Contains(out, "free space:") {
		t.Errorf("status after compact: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := e2eRun(t, bin, "--db", db, "status", "--check"); code != 0 {
		t.Errorf("status --check after compact: exit %d\n%s", code, errs)
	}

	var sum struct {
		Path   string `json:"path"`
		Before int64  `json:"before_bytes"`
		After  int64  `json:"after_bytes"`
	}
	out, errs, code = e2eRun(t, bin, "--db", db, "compact", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || sum.Path != db || sum.Before != after || sum.After != fileSize(t, db) {
		t.Errorf("compact --json: exit %d, %+v (%v), the file was %d bytes, is %d\n%s", code, sum, err, after, fileSize(t, db), errs)
	}
}

// TestCompactRefusals: an index a build holds is refused at once as busy
// (exit 1, naming who holds it), and so are a missing index, a file that
// is no index and a damaged one (pointing at build --reindex), each
// named, and the index is left as it was.
func TestCompactRefusals(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "index.db")
	writeForgotten(t, db, 2000)
	w, err := store.OpenWriter(db, mergeTestID, store.WriterOptions{Command: "clipidx watch"})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(db) // as the writer's opening left it
	if err != nil {
		t.Fatal(err)
	}
	_, errs, code := e2eRun(t, bin, "--db", db, "compact")
	w.Close()
	if want := "clipidx: index busy: " + store.ErrBuildRunning.Error() + ": held by pid " + strconv.Itoa(os.Getpid()); code != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "(clipidx watch)") {
		t.Errorf("compact while a watch holds the index: exit %d\n%s\nwant exit 1 and %q", code, errs, want)
	}
	if now, err := os.ReadFile(db); err != nil || !bytes.Equal(now, orig) {
		t.Errorf("a refused compact changed the index (%v)", err)
	}

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not an index\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.db")
	if err := os.WriteFile(damaged, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// Pages overwritten with garbage, as a bad disk leaves them: every
	// third page after the meta pages, so that some hold records (one
	// page in the middle of the file was sometimes a free one, and the
	// index then read whole).
	f, err := os.OpenFile(damaged, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(2 * 4096); off+4096 <= int64(len(orig)); off += 3 * 4096 {
		f.WriteAt(bytes.Repeat([]byte{0xa5}, 4096-16), off+16)
	}
	f.Close()
	for _, tc := range []struct{ path, words string }{
		{filepath.Join(dir, "none.db"), "no index yet"},
		{text, "not a clipidx index"},
		{damaged, "build --reindex"},
	} {
		before, _ := os.ReadFile(tc.path)
		_, errs, code := e2eRun(t, bin, "--db", tc.path, "compact")
		if code != 1 || !strings.Contains(errs, tc.path) || !strings.Contains(errs, tc.words) {
			t.Errorf("compact of %s: exit %d\n%s\nwant exit 1, the file named and %q", tc.path, code, errs, tc.words)
		}
		if now, _ := os.ReadFile(tc.path); !bytes.Equal(now, before) {
			t.Errorf("a refused compact changed %s", tc.path)
		}
	}
}

// copiesOf lists the new files of compactions (named as merges name
// their copies) beside db.
func copiesOf(t *testing.T, db string) []string {
	t.Helper()
	m, err := filepath.Glob(db + ".merge-*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// opened reports whether process pid holds path open (its signal
// handling is set up by then); where /proc does not tell, it waits a
// second and says yes.
func opened(pid int, path string) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		time.Sleep(time.Second)
		return true
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	for _, fd := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l == path {
			return true
		}
	}
	return false
}

// TestCompactInterruptEndToEnd: Ctrl-C or SIGTERM stops a compact with
// exit 130, the index byte for byte as it was and no new file left; one
// killed with SIGKILL leaves its new file, which the next compact removes
// and reports.
func TestCompactInterruptEndToEnd(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "index.db")
	writeForgotten(t, db, 60000)
	orig, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		if now, err := os.ReadFile(db); err != nil || !bytes.Equal(now, orig) {
			t.Errorf("the index changed (%v)", err)
		}
		if left := copiesOf(t, db); left != nil {
			t.Errorf("left beside the index: %v", left)
		}
	}
	start := func(t *testing.T) (*exec.Cmd, *lockedBuffer, chan struct{}) {
		cmd := exec.Command(bin, "--db", db, "compact")
		cmd.Env = append(os.Environ(), "CLIPIDX_DB=")
		stderr := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = io.Discard, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		return cmd, stderr, exited
	}
	waitFor := func(t *testing.T, what string, exited chan struct{}, stderr *lockedBuffer, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !done() {
			select {
			case <-exited:
				t.Fatalf("compact ended before %s:\n%s", what, stderr)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s in 30s:\n%s", what, stderr)
			}
			time.Sleep(time.Millisecond)
		}
	}

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// A commit of another process holds the index: compact waits
			// for its shared lock, and is stopped meanwhile.
			f, err := os.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			cmd, stderr, exited := start(t)
			waitFor(t, "the index opened", exited, stderr, func() bool { return opened(cmd.Process.Pid, db) })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "word of stopping", exited, stderr, func() bool {
				return strings.Contains(stderr.String(), "stopping: "+db+" stays as it was")
			})
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("compact did not end in 30s after %v:\n%s", sig, stderr)
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit %d after %v, want 130\n%s", code, sig, stderr)
			}
			if want := "clipidx: compact interrupted: " + db + " is unchanged and no new file is left"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr after %v:\n%s\nwant %q", sig, stderr, want)
			}
			unchanged(t)
		})
	}

	// kill -9 as soon as the new file is there: it stays, the index does
	// not change; the next compact removes it and says how much it freed.
	cmd, stderr, exited := start(t)
	var left string
	waitFor(t, "new file", exited, stderr, func() bool {
		if c := copiesOf(t, db); len(c) > 0 {
			left = c[0]
		}
		return left != ""
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if cmd.ProcessState.Exited() {
		t.Fatalf("compact ended (%v) before it could be killed: the index is too small to stop it part-way\n%s", cmd.ProcessState, stderr)
	}
	if now, err := os.ReadFile(db); err != nil || !bytes.Equal(now, orig) {
		t.Fatalf("a compact killed with SIGKILL changed the index (%v)", err)
	}
	fi, err := os.Stat(left)
	if err != nil {
		t.Fatalf("the new file of a compact killed with SIGKILL: %v", err)
	}
	_, errs, code := e2eRun(t, bin, "--db", db, "compact")
	if code != 0 {
		t.Fatalf("compact after a killed one: exit %d\n%s", code, errs)
	}
	if want := fmt.Sprintf("removed %s, left by an interrupted compact or merge (%s freed)", left, humanBytes(fi.Size())); !strings.Contains(errs, want) {
		t.Errorf("stderr of the compact after a killed one:\n%s\nwant %q", errs, want)
	}
	if left := copiesOf(t, db); left != nil {
		t.Errorf("left beside the index after a compact: %v", left)
	}
	if fileSize(t, db) >= int64(len(orig)) {
		t.Errorf("the index is %d bytes after compact, %d before", fileSize(t, db), len(orig))
	}
}

// TestServeAcrossCompact: a serve open on the index answers throughout a
// compact and after it, the same results; a reader open across it reads
// what it read before.
func TestServeAcrossCompact(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root, photos, db, g := builtPhotos(t, bin, model)
	// Free pages: a photo forgotten, another built back.
	entries, err := os.ReadDir(photos)
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(photos, entries[0].Name())
	if _, errs, code := e2eRun(t, bin, append(g, "forget", gone)...); code != 0 {
		t.Fatalf("forget: %d %s", code, errs)
	}
	across, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer across.Close()
	was := stateOf(t, across)

	cmd := exec.Command(bin, append(g, "serve", "--addr", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(root, "cache"), "CLIPIDX_DB=", "CLIPIDX_MODEL=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	f := strings.Fields(line)
	u, err := url.Parse(f[len(f)-1])
	if err != nil {
		t.Fatalf("serve printed %q: %v", line, err)
	}
	base := "http://127.0.0.1:" + u.Port()
	c := &http.Client{Timeout: 20 * time.Second}
	ask := func() (string, error) {
		resp, err := c.Get(base + "/api/search?q=" + url.QueryEscape("a cat") + "&k=20")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		var a struct {
			Results []struct {
				Path  string
				Score float32
			}
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return "", err
		}
		return fmt.Sprint(a.Results), nil
	}
	before, err := ask()
	if err != nil || !strings.Contains(before, photos) {
		t.Fatalf("search before compact: %q, %v", before, err)
	}

	stop, done := make(chan struct{}), make(chan error, 1)
	asked := 0
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			got, err := ask()
			if err == nil && got != before {
				err = fmt.Errorf("results %s, before compact %s", got, before)
			}
			if err != nil {
				done <- fmt.Errorf("search %d during compact: %v", asked, err)
				return
			}
			asked++
		}
	}()
	_, errs, code := e2eRun(t, bin, "--db", db, "compact")
	close(stop)
	if err := <-done; err != nil {
		t.Error(err)
	}
	if code != 0 {
		t.Fatalf("compact: exit %d\n%s", code, errs)
	}
	if after, err := ask(); err != nil || after != before {
		t.Errorf("search after compact: %q, %v; before: %q", after, err, before)
	}
	if now := stateOf(t, across); !reflect.DeepEqual(now, was) {
		t.Errorf("a reader open across the compact reads otherwise (%d records, was %d)", len(now.Files), len(was.Files))
	}
	if now := readState(t, db); !reflect.DeepEqual(now, was) {
		t.Errorf("a reader opened after the compact reads otherwise (%d records, was %d)", len(now.Files), len(was.Files))
	}
	t.Logf("%d searches answered during the compact", asked)
}
