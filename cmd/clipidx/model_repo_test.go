package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelPathRefusesBadRepo: model path takes only the repository ids
// model pull takes; "../../etc" once printed a folder outside the models
// folder and exited 0. Both refuse a bad id as a usage error (exit 2).
func TestModelPathRefusesBadRepo(t *testing.T) {
	home := isolate(t)
	for _, repo := range []string{"../../etc", "a/b/c", "bad repo", "..", "owner/"} {
		for _, args := range [][]string{{"path", repo}, {"pull", repo, "--endpoint", "http://127.0.0.1:1"}} {
			out, errs, code := runCLI(t, append([]string{"model"}, args...)...)
			if code != 2 || out != "" || !strings.Contains(errs, "bad name") {
				t.Errorf("model %q: exit %d, stdout %q, stderr %q; want exit 2 and the name refused", args, code, out, errs)
			}
		}
	}
	out, errs, code := runCLI(t, "model", "path", "openai/clip-vit-base-patch32")
	if want := filepath.Join(home, "cache", "clipidx", "models", "openai", "clip-vit-base-patch32"); code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("model path of a good id: exit %d, %q %q; want %s", code, out, errs, want)
	}
}

// TestModelPullDirHelp: pull --dir's help says where pull puts a
// checkpoint without it, REPO's folder whatever --model says (as pull
// does): it said the --model folder.
func TestModelPullDirHelp(t *testing.T) {
	home := isolate(t)
	s := clipHub(t, defaultRepo)
	other := filepath.Join(home, "elsewhere")
	if _, errs, code := runCLI(t, "--model", other, "model", "pull", "--endpoint", s.Endpoint()); code != 0 {
		t.Fatalf("pull: exit %d %s", code, errs)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("pull with --model %s wrote there (stat: %v)", other, err)
	}
	if _, err := os.Stat(filepath.Join(pullDir(defaultRepo), "model.safetensors")); err != nil {
		t.Error(err)
	}
	usage := newModelPullCmd().Flags().Lookup("dir").Usage
	if strings.Contains(usage, "the --model folder") || !strings.Contains(usage, "model path REPO") {
		t.Errorf("--dir: %q; want it to say a checkpoint goes to the folder model path prints", usage)
	}
}

// TestModelPullVerifySmallFile: pull --verify downloads again a config.json
// damaged behind its record's back (same size and modification time); it
// said "already verified".
func TestModelPullVerifySmallFile(t *testing.T) {
	isolate(t)
	s := clipHub(t, defaultRepo)
	t.Setenv("HF_ENDPOINT", s.Endpoint())
	if _, errs, code := runCLI(t, "model", "pull"); code != 0 {
		t.Fatalf("pull: exit %d %s", code, errs)
	}
	p := filepath.Join(pullDir(defaultRepo), "config.json")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	good := s.Files["config.json"].Data
	bad := bytes.Clone(good)
	bad[0] ^= 1
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil { // as touch -r
		t.Fatal(err)
	}
	if out, _, _ := runCLI(t, "model", "pull"); !strings.Contains(lineOf(out, "config.json"), "already verified") {
		t.Fatalf("pull without --verify: %s; want the record trusted (the damage unseen)", out)
	}
	out, errs, code := runCLI(t, "model", "pull", "--verify")
	if code != 0 || strings.Contains(lineOf(out, "config.json"), "already verified") {
		t.Errorf("pull --verify: exit %d\n%s%s; want config.json downloaded again", code, out, errs)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, good) {
		t.Errorf("config.json after pull --verify: %q, want %q", got, good)
	}
}

// lineOf is the line of out that holds s.
func lineOf(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
