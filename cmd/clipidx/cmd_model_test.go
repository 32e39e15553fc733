package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/hub"
	"github.com/clipidx/clipidx/internal/hub/hubtest"
)

// runCLI runs the command in-process like run() does, capturing its output.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		errb.WriteString("clipidx: " + err.Error() + "\n")
		code = exitCode(err)
	}
	return out.String(), errb.String(), code
}

// clipHub serves a small repository with every file `model pull` fetches.
func clipHub(t *testing.T, repo string) *hubtest.Server {
	t.Helper()
	files := map[string]hubtest.File{}
	for i, f := range hub.CLIPFiles {
		files[f] = hubtest.File{Data: hubtest.Random(100+i*37, uint64(i))}
	}
	files["model.safetensors"] = hubtest.File{Data: hubtest.Random(200_000, 7), LFS: true}
	return hubtest.New(t, repo, files)
}

// isolate points every default location and the hub variables at the test.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HOME", home)
	for _, k := range []string{"CLIPIDX_MODEL", "HF_ENDPOINT", "HF_TOKEN"} {
		t.Setenv(k, "")
	}
	return home
}

func TestModelPull(t *testing.T) {
	home := isolate(t)
	s := clipHub(t, defaultRepo)
	t.Setenv("HF_ENDPOINT", s.Endpoint())

	out, errs, code := runCLI(t, "model", "pull", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum pullSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	wantDir := filepath.Join(home, "cache", "clipidx", "models", "laion", "CLIP-ViT-H-14-laion2B-s32B-b79K")
	if sum.Dir != wantDir || sum.Repo != defaultRepo || len(sum.Files) != len(hub.CLIPFiles) || sum.Commit != s.Commit {
		t.Fatalf("summary %+v, want %d files in %s", sum, len(hub.CLIPFiles), wantDir)
	}
	for _, f := range hub.CLIPFiles {
		got, err := os.ReadFile(filepath.Join(wantDir, f))
		if err != nil || !bytes.Equal(got, s.Files[f].Data) {
			t.Errorf("%s: %d bytes, %v", f, len(got), err)
		}
	}
	if sum.Fetched != sum.Files[len(sum.Files)-1].Size+int64(sumSmall(s)) {
		t.Errorf("fetched %d bytes", sum.Fetched)
	}

	// Again: everything is skipped, and the text output says so.
	out, errs, code = runCLI(t, "model", "pull")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(out, "already verified"); n != len(hub.CLIPFiles) {
		t.Errorf("second pull printed %d 'already verified' lines:\n%s", n, out)
	}
	if !strings.Contains(out, "model ready in "+wantDir) || strings.Contains(out, "--model") {
		t.Errorf("output:\n%s", out)
	}
}

func sumSmall(s *hubtest.Server) (n int) {
	for _, f := range s.Files {
		if !f.LFS {
			n += len(f.Data)
		}
	}
	return n
}

func TestModelPullOtherRepo(t *testing.T) {
	home := isolate(t)
	const other = "openai/clip-vit-base-patch32"
	s := clipHub(t, other)
	delete(s.Files, "special_tokens_map.json") // optional: a note, not an error
	out, errs, code := runCLI(t, "model", "pull", other, "--endpoint", s.Endpoint())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	dir := filepath.Join(home, "cache", "clipidx", "models", "openai", "clip-vit-base-patch32")
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"special_tokens_map.json", "optional", `--model "` + dir + `"`} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if path, _, _ := runCLI(t, "model", "path", other); strings.TrimSpace(path) != dir {
		t.Errorf("model path = %q, want %q", path, dir)
	}

	// --dir wins; a required file missing is an error naming it.
	delete(s.Files, "merges.txt")
	dir2 := filepath.Join(home, "elsewhere")
	_, errs, code = runCLI(t, "model", "pull", other, "--endpoint", s.Endpoint(), "--dir", dir2)
	if code != 1 || !strings.Contains(errs, "merges.txt") || !strings.Contains(errs, "404") {
		t.Errorf("exit %d, stderr %q: want an error naming merges.txt", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir2, "config.json")); err != nil {
		t.Errorf("--dir not used: %v", err)
	}
}

func TestModelPullToken(t *testing.T) {
	isolate(t)
	s := clipHub(t, defaultRepo)
	s.Token = "hf_abc"
	dir := t.TempDir()
	_, errs, code := runCLI(t, "model", "pull", "--endpoint", s.Endpoint(), "--dir", dir)
	if code != 1 || !strings.Contains(errs, "set HF_TOKEN") || !strings.Contains(errs, defaultRepo) || !strings.Contains(errs, "config.json") {
		t.Errorf("without a token: exit %d, stderr %q; want a hint to set HF_TOKEN naming the repo and file", code, errs)
	}
	t.Setenv("HF_TOKEN", "hf_wrong")
	if _, errs, _ = runCLI(t, "model", "pull", "--endpoint", s.Endpoint(), "--dir", dir); !strings.Contains(errs, "token in HF_TOKEN was sent") {
		t.Errorf("wrong token: stderr %q", errs)
	}
	t.Setenv("HF_TOKEN", "hf_abc")
	if _, errs, code = runCLI(t, "model", "pull", "--endpoint", s.Endpoint(), "--dir", dir); code != 0 {
		t.Fatalf("with the token: exit %d: %s", code, errs)
	}
	for _, r := range s.Requests() {
		if r.Server == "cdn" && r.Authorization != "" {
			t.Errorf("the token reached the CDN: %+v", r)
		}
	}
}

func TestModelPullResumes(t *testing.T) {
	isolate(t)
	defer func(d time.Duration) { pullBackoff = d }(pullBackoff)
	pullBackoff = time.Millisecond
	s := clipHub(t, defaultRepo)
	dir := t.TempDir()
	// The connection drops twice; the pull recovers within one run.
	s.CutNext("model.safetensors", 50_000, 60_000)
	out, errs, code := runCLI(t, "model", "pull", "--endpoint", s.Endpoint(), "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum pullSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errs, "retrying in"); n != 2 {
		t.Errorf("stderr has %d retry notes, want 2:\n%s", n, errs)
	}
	last := sum.Files[len(sum.Files)-1]
	if last.File != "model.safetensors" || last.Fetched != 200_000 || last.Size != 200_000 {
		t.Errorf("%+v: want 200000 bytes fetched once each", last)
	}

	// A corrupt CDN: exit 1 with the checksum error and no file left.
	s.Corrupt("model.safetensors", true)
	dir2 := t.TempDir()
	_, errs, code = runCLI(t, "model", "pull", "--endpoint", s.Endpoint(), "--dir", dir2)
	if code != 1 || !strings.Contains(errs, "checksum mismatch") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir2, "model.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("corrupt model.safetensors left in place (stat: %v)", err)
	}
}

// TestModelPullNeverOverwritesTheModelInUse: with --model or CLIPIDX_MODEL
// pointing at a model, pulling another repository goes to that
// repository's own folder and leaves the model in use untouched.
func TestModelPullNeverOverwritesTheModelInUse(t *testing.T) {
	home := isolate(t)
	const other = "openai/clip-vit-base-patch32"
	s := clipHub(t, other)
	inUse := filepath.Join(home, "my-model")
	if err := os.MkdirAll(inUse, 0o755); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(inUse, "model.safetensors")
	if err := os.WriteFile(weights, []byte("the model in use"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, "cache", "clipidx", "models", "openai", "clip-vit-base-patch32")
	t.Setenv("CLIPIDX_MODEL", inUse)
	for _, args := range [][]string{
		{"model", "pull", other, "--endpoint", s.Endpoint()},
		{"--model", inUse, "model", "pull", other, "--endpoint", s.Endpoint()},
	} {
		if _, errs, code := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		if b, err := os.ReadFile(weights); err != nil || string(b) != "the model in use" {
			t.Fatalf("%v overwrote the model in use (%q, %v)", args, b, err)
		}
		if _, err := os.Stat(filepath.Join(want, "model.safetensors")); err != nil {
			t.Fatalf("%v: not in the repository's folder: %v", args, err)
		}
	}
	if path, _, _ := runCLI(t, "model", "path", other); strings.TrimSpace(path) != want {
		t.Errorf("model path = %q, want %q", path, want)
	}
}

// TestModelPathPacked checks that `model path --packed` prints the folder
// the model's packed weights are kept in (the one the model is opened
// with), and on stderr what it holds and how to remove it.
func TestModelPathPacked(t *testing.T) {
	home := isolate(t)
	dir := filepath.Join(home, "cache", "clipidx", "packed")
	if got := modelOptions(clipnpu.TextTower).PackCache; got != dir {
		t.Errorf("the model is opened with packed weights in %q, want %q", got, dir)
	}
	out, errs, code := runCLI(t, "model", "path", "--packed")
	if code != 0 || strings.TrimSpace(out) != dir || !strings.Contains(errs, "no packed weights yet") {
		t.Fatalf("empty: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m-text-bf16-0.pack"), make([]byte, 30e6), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runCLI(t, "model", "path", "--packed")
	if code != 0 || strings.TrimSpace(out) != dir || !strings.Contains(errs, "0.03 GB in 1 files") || !strings.Contains(errs, "rm -r "+dir) {
		t.Fatalf("one file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
