package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/jpeg"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestServeWithoutThumbCache runs the binary with a cache folder that
// cannot be made (XDG_CACHE_HOME is a regular file, which stops mkdir even
// for root, as a read-only home stops it for a user): serve starts, says
// once on stderr that thumbnails are not kept, naming the folder and the
// error, and answers thumbnails with images.
func TestServeWithoutThumbCache(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root, _, _, g := builtPhotos(t, bin, model)
	cache := filepath.Join(root, "cache")
	if err := os.WriteFile(cache, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	thumbDir := filepath.Join(cache, "clipidx", "thumbs")

	cmd := exec.Command(bin, append(g, "serve", "--addr", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "CLIPIDX_MODEL=", "CLIPIDX_DB=", "CLIPIDX_DEVICE=", "CLIPIDX_WEIGHTS=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() string {
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve after an interrupt: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("serve did not stop on an interrupt")
		}
		return errb.String() // read only once the process has ended
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		<-done
		t.Fatalf("serve did not start: %v, stderr %q", err, errb.String())
	}
	f := strings.Fields(line)
	base := strings.TrimSuffix(f[len(f)-1], "/")
	c := &http.Client{Timeout: 30 * time.Second}
	get := func(u string) (int, []byte) {
		resp, err := c.Get(base + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	code, body := get("/api/search?k=1000&q=" + url.QueryEscape("year:1900..9999"))
	var a struct{ Results []struct{ Thumb string } }
	if code != http.StatusOK || json.Unmarshal(body, &a) != nil || len(a.Results) == 0 {
		stop()
		t.Fatalf("listing: %d %s", code, body)
	}
	for _, r := range a.Results[:min(3, len(a.Results))] {
		code, body := get(r.Thumb)
		if _, err := jpeg.Decode(bytes.NewReader(body)); code != http.StatusOK || err != nil {
			t.Errorf("GET %s: %d, %d bytes (%v), want 200 and a JPEG", r.Thumb, code, len(body), err)
		}
	}
	errs := stop()
	if n := strings.Count(errs, "thumbnails are not kept"); n != 1 || !strings.Contains(errs, thumbDir) || !strings.Contains(errs, "not a directory") {
		t.Errorf("stderr %q: want one note naming %s and the error", errs, thumbDir)
	}
	if _, err := os.Stat(thumbDir); err == nil {
		t.Errorf("%s exists", thumbDir)
	}
}
