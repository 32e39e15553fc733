package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// fakeOpener puts in a new folder a browser opener (xdg-open, or open on
// macOS) that exits with code, and returns the folder.
func fakeOpener(t *testing.T, code int) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the opener is rundll32 on Windows")
	}
	dir := t.TempDir()
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	script := "#!/bin/sh\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenBrowserWaits: `serve --open` where xdg-open finds no browser
// (exit 3) said nothing, and the exited xdg-open stayed a zombie for the
// server's life: it was started and never waited for. It is now waited
// for, and a failure is told.
func TestOpenBrowserWaits(t *testing.T) {
	const u = "http://127.0.0.1:8080/"
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
		want string // in the note; "" = no note
	}{
		{"no browser", func(t *testing.T) string { return fakeOpener(t, 3) }, "exit status 3"},
		{"opened", func(t *testing.T) string { return fakeOpener(t, 0) }, ""},
		{"no opener", func(t *testing.T) string { return t.TempDir() }, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path(t))
			var errb bytes.Buffer
			cmd := &cobra.Command{}
			cmd.SetErr(&errb)
			select {
			case <-openBrowser(cmd, u):
			case <-time.After(time.Minute):
				t.Fatal("the opener was not waited for")
			}
			got := errb.String()
			switch {
			case tc.want == "" && got != "":
				t.Errorf("note %q, want none", got)
			case tc.want != "" && (!strings.Contains(got, "could not open a browser") || !strings.Contains(got, tc.want) || !strings.Contains(got, "open "+u+" yourself")):
				t.Errorf("note %q, want one saying %q", got, tc.want)
			}
		})
	}
}

// TestServeOpenNoBrowserEndToEnd runs `serve --open` with an xdg-open that
// finds no browser: the server says so, and keeps no zombie child.
func TestServeOpenNoBrowserEndToEnd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := e2eBinary(t)
	root := t.TempDir()
	db := filepath.Join(root, "index.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil { // no index yet: enough to serve
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--db", db, "serve", "--addr", "127.0.0.1:0", "--open")
	cmd.Env = append(os.Environ(), "PATH="+fakeOpener(t, 3)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"), "CLIPIDX_MODEL=", "CLIPIDX_DB=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(time.Minute)
	for noted := false; !noted; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("serve ended without saying the browser could not be opened")
			}
			noted = strings.Contains(l, "could not open a browser (xdg-open: exit status 3)")
		case <-deadline:
			t.Fatal("serve --open did not say that xdg-open found no browser")
		}
	}
	go func() { // the rest of stderr, so that serve never blocks on it
		for range lines {
		}
	}()
	if z := zombies(t, cmd.Process.Pid); len(z) > 0 {
		t.Errorf("serve keeps zombie children %v", z)
	}
}

// zombies lists the children of pid that have exited and not been waited
// for.
func zombies(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a process, or gone
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 2 && f[0] == "Z" && f[1] == strconv.Itoa(pid) {
			out = append(out, s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return out
}
