package main

import (
	"bufio"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestServeAndPreviewEndToEnd runs the binary: serve prints its URL and
// answers on it (the token required beyond loopback is printed too), and
// search --preview says why it draws nothing when the output is a pipe.
func TestServeAndPreviewEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root, _, _, g := builtPhotos(t, bin, model)

	out, errs, code := e2eRun(t, bin, append(g, "search", "--preview", "-k", "2", "a cat")...)
	if code != 0 || strings.Count(out, "\n") != 2 || strings.Contains(out, "\x1b") || !strings.Contains(errs, "--preview shows no images here: the output is not a terminal") {
		t.Errorf("search --preview into a pipe: exit %d, out %q, err %q", code, out, errs)
	}
	if _, errs, code := e2eRun(t, bin, append(g, "search", "--preview", "--json", "a cat")...); code != 2 {
		t.Errorf("--preview --json: exit %d %s, want 2", code, errs)
	}

	for _, tc := range []struct {
		addr  string
		token bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		cmd := exec.Command(bin, append(g, "serve", "--addr", tc.addr)...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(root, "cache"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("serve %s: %v", tc.addr, err)
		}
		f := strings.Fields(line)
		u := f[len(f)-1]
		if tc.token {
			u = f[3] // "serving DB on URL (reachable ...)"
		}
		if strings.Contains(u, "token=") != tc.token {
			t.Errorf("serve %s printed %q", tc.addr, line)
		}
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatalf("serve %s printed %q: %v", tc.addr, line, err)
		}
		// Reach it on loopback (a 0.0.0.0 server prints the host name).
		base := "http://127.0.0.1:" + pu.Port()
		c := &http.Client{Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", base+"/api/status", nil)
		if tc.token {
			resp, err := c.Get(base + "/api/status?token=" + pu.Query().Get("token"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 { // the URL's token is for the page only
				t.Errorf("serve %s: status with ?token=: %d, want 401", tc.addr, resp.StatusCode)
			}
			req.Header.Set("Authorization", "Bearer "+pu.Query().Get("token"))
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("serve %s: %v", tc.addr, err)
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var st struct{ Images int }
			if resp.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.Images != 7 {
				t.Errorf("serve %s: /api/status %d %s", tc.addr, resp.StatusCode, b)
			}
		}
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve %s after an interrupt: %v", tc.addr, err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve %s did not stop on an interrupt", tc.addr)
		}
	}
}

// TestServeToken: the token comes from --token, --token-file (trimmed; an
// empty file refused) or $CLIPIDX_TOKEN, so it can stay out of ps.
func TestServeToken(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "CLIPIDX_TOKEN" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name, flag, file, env, want, err string
	}{
		{"none", "", "", "", "", ""},
		{"env", "", "", "fromenv", "fromenv", ""},
		{"file trimmed", "", file("t", "  fromfile\n"), "fromenv", "fromfile", ""},
		{"flag", "fromflag", "", "fromenv", "fromflag", ""},
		{"empty file", "", file("empty", " \n\t\n"), "", "", "is empty"},
		{"missing file", "", filepath.Join(dir, "nothing"), "", "", "--token-file"},
		{"both flags", "x", file("t2", "y"), "", "", "not both"},
	} {
		got, err := serveToken(tc.flag, tc.file, env(tc.env))
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v; want %q, error with %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestServeStopsDuringDownload: SIGTERM while a download is still running
// (a browser playing a video, here a large image read slowly) ends serve
// with exit 0 after its grace period, not "context deadline exceeded" and
// exit 1 (which systemd counts as a failed unit).
func TestServeStopsDuringDownload(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos, db := filepath.Join(root, "photos"), filepath.Join(root, "index.db")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	// 36 MB, more than the sockets buffer: the handler is still writing.
	img := image.NewRGBA(image.Rect(0, 0, 3000, 3000))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	f, err := os.Create(filepath.Join(photos, "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(f, img); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g := []string{"--db", db, "--model", model, "--device", "cpu"}
	if _, errs, code := e2eRun(t, bin, append(g, "build", photos)...); code != 0 {
		t.Fatalf("build: %d %s", code, errs)
	}
	cmd := exec.Command(bin, append(g, "serve", "--addr", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(root, "cache"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	f2 := strings.Fields(line)
	base := strings.TrimSuffix(f2[len(f2)-1], "/")
	resp, err := http.Get(base + "/api/search?q=" + url.QueryEscape("year:1900..9999"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct{ Results []struct{ Image string } }
	err = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if err != nil || len(a.Results) != 1 {
		t.Fatalf("listing: %v, %+v", err, a)
	}
	dl, err := http.Get(base + a.Results[0].Image)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	if _, err := dl.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve stopped during a download: %v, stderr %q; want exit 0", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of SIGTERM")
	}
}
