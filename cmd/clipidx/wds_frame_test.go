package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestSampleKeyLikeAFrame: a webdataset sample whose key holds "#t=5"
// (member scene#t=5.png) is a sample, not a video's frame: status counts
// no video, search --json gives it no video and time, --paths-only prints
// its own path, and serve serves its image from the shard. Before, it was
// taken for frame 5 s of the video SHARD.tar#scene.
func TestSampleKeyLikeAFrame(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	img, err := os.ReadFile(filepath.Join(model, "images", "checker_320x240.png"))
	if err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(root, "s.tar")
	f, err := os.Create(shard)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, name := range []string{"scene#t=5.png", "scene#t=5.txt"} {
		data := img
		if strings.HasSuffix(name, ".txt") {
			data = []byte("a checkerboard")
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sample := shard + "#scene#t=5"
	g := []string{"--model", model, "--device", "reference", "--db", filepath.Join(root, "i.db")}
	run := func(args ...string) string {
		t.Helper()
		out, errs, code := e2eRun(t, bin, append(slices.Clone(g), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	run("build", shard)

	var st struct{ Images, Videos, Frames int }
	if err := json.Unmarshal([]byte(run("status", "--json")), &st); err != nil || st.Images != 1 || st.Videos != 0 || st.Frames != 0 {
		t.Errorf("status --json: %+v, %v; want 1 image, no video", st, err)
	}
	if out := run("status"); strings.Contains(out, "videos:") {
		t.Errorf("status counts a video:\n%s", out)
	}
	var hits []map[string]any
	if err := json.Unmarshal([]byte(run("search", "--json", "a checkerboard")), &hits); err != nil || len(hits) != 1 {
		t.Fatalf("search --json: %v, %v", hits, err)
	}
	if _, video := hits[0]["video"]; hits[0]["path"] != sample || video || hits[0]["time"] != nil {
		t.Errorf("search --json: %v, want the sample %s without video and time", hits[0], sample)
	}
	if out := run("search", "--paths-only", "a checkerboard"); out != sample+"\n" {
		t.Errorf("search --paths-only printed %q, want %q", out, sample+"\n")
	}

	cmd := exec.Command(bin, append(slices.Clone(g), "serve", "--addr", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(root, "cache"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	fields := strings.Fields(line)
	pu, err := url.Parse(fields[len(fields)-1])
	if err != nil {
		t.Fatalf("serve printed %q: %v", line, err)
	}
	base := "http://127.0.0.1:" + pu.Port()
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(u string) (int, []byte) {
		t.Helper()
		resp, err := c.Get(base + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := get("/api/search?q=" + url.QueryEscape("a checkerboard"))
	var ans struct {
		Results []struct {
			Path, Image, Video string
			Time               *float64
		}
	}
	if err := json.Unmarshal(body, &ans); code != 200 || err != nil || len(ans.Results) != 1 {
		t.Fatalf("/api/search: %d %s", code, body)
	}
	r := ans.Results[0]
	if r.Path != sample || r.Video != "" || r.Time != nil {
		t.Errorf("/api/search: %+v, want the sample %s without video and time", r, sample)
	}
	if code, body := get(r.Image); code != 200 || !bytes.Equal(body, img) {
		t.Errorf("%s: %d, %d bytes; want 200 and the sample's image", r.Image, code, len(body))
	}
}
