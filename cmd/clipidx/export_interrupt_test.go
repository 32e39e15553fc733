package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/export"
)

// folderTree lists what is under root, relative to it, folders ending in
// "/".
func folderTree(t *testing.T, root string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// plantFiles creates files (and, for names ending in "/", folders) under
// root.
func plantFiles(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		dir := filepath.Dir(p)
		if strings.HasSuffix(n, "/") {
			dir = p
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(n, "/") {
			if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// signalWhen starts cmd, sends it sig once ready() holds (checked every
// few milliseconds while it runs), and returns its stderr and exit code.
func signalWhen(t *testing.T, cmd *exec.Cmd, sig os.Signal, ready func() bool) (string, int) {
	t.Helper()
	cmd.Env = append(os.Environ(), "CLIPIDX_MODEL=", "CLIPIDX_DB=", "CLIPIDX_DEVICE=", "CLIPIDX_WEIGHTS=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	giveUp := time.After(2 * time.Minute) // never ready: fail, not hang
wait:
	for {
		select {
		case err = <-exited:
			t.Fatalf("%v ended before it was signalled: %v\n%s", cmd.Args, err, errb.String())
		case <-giveUp:
			cmd.Process.Kill()
			t.Fatalf("%v: never ready to be signalled\n%s", cmd.Args, errb.String())
		case <-time.After(2 * time.Millisecond):
			if ready() {
				break wait
			}
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return errb.String(), cmd.ProcessState.ExitCode() // -1 when killed by the signal
}

// TestExportInterruptedRemovesItsFiles: Ctrl-C or SIGTERM during a
// multi-partition export, once a partition is written, exits 130 or 143,
// says so, and leaves the output as it was (missing, or an empty folder
// such as a mount point).
func TestExportInterruptedRemovesItsFiles(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "ix.db")
	// 10,000 partitions of one row each, synced one by one: seconds of
	// work left when the first is there.
	if err := export.WriteSynthetic(db, 10000, 4, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		sig    syscall.Signal
		code   int
		exists bool // the output folder exists, empty, before the export
	}{
		{"SIGINT into a new folder", syscall.SIGINT, 130, false},
		{"SIGTERM into an empty folder", syscall.SIGTERM, 143, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			out := filepath.Join(root, "emb")
			if c.exists {
				plantFiles(t, root, "emb/")
			}
			before := folderTree(t, root)
			cmd := exec.Command(bin, "--db", db, "export", "--format", "clip-retrieval", "--rows-per-partition", "1", out)
			stderr, code := signalWhen(t, cmd, c.sig, func() bool {
				ents, _ := os.ReadDir(filepath.Join(out, "img_emb"))
				return slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return !strings.HasPrefix(e.Name(), ".") })
			})
			if code != c.code || !strings.Contains(stderr, "interrupted") || !strings.Contains(stderr, "removed") {
				t.Errorf("export stopped by %v: exit %d, stderr %q; want %d and what was removed", c.sig, code, stderr, c.code)
			}
			if after := folderTree(t, root); !slices.Equal(before, after) {
				t.Errorf("after the stopped export %d entries are left (%q...), want %q as before", len(after), after[:min(len(after), 6)], before)
			}
		})
	}
}

// TestExportRetryOverKilledLeftovers: what a killed export leaves (hidden
// temporary files, empty img_emb/ and metadata/ folders) does not block
// the same export again, which removes it and says so; a complete file of
// an earlier export is still refused, and nothing is removed.
func TestExportRetryOverKilledLeftovers(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ix.db")
	if err := export.WriteSynthetic(db, 50, 4, 1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "emb")
	plantFiles(t, out, "img_emb/.img_emb_0.npy.tmp-3k9xq2", "metadata/.metadata_0.parquet.tmp-zz01", "text_emb/")
	_, stderr, code := runCLI(t, "--db", db, "export", "--format", "clip-retrieval", out)
	if code != 0 || !strings.Contains(stderr, "removed what an interrupted export had left") || !strings.Contains(stderr, ".img_emb_0.npy.tmp-3k9xq2") {
		t.Errorf("export over a killed export's leftovers: exit %d, stderr %q", code, stderr)
	}
	want := []string{"img_emb/", "img_emb/img_emb_0.npy", "metadata/", "metadata/metadata_0.parquet"}
	if got := folderTree(t, out); !slices.Equal(got, want) {
		t.Errorf("folder holds %q, want %q", got, want)
	}

	plantFiles(t, out, "img_emb/.img_emb_1.npy.tmp-abc")
	before := folderTree(t, out)
	_, stderr, code = runCLI(t, "--db", db, "export", "--format", "clip-retrieval", out)
	if code != 1 || !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "img_emb_0.npy") {
		t.Errorf("export over a complete export: exit %d, stderr %q; want not empty, naming img_emb_0.npy", code, stderr)
	}
	if after := folderTree(t, out); !slices.Equal(before, after) {
		t.Errorf("a refused export changed the folder: %q, was %q", after, before)
	}
}

// TestModelRandomFailureLeavesNothing: model random failing on its second
// file (a file size limit, as a full disk) removes config.json, its
// temporary files and the folders it made, and says so.
func TestModelRandomFailureLeavesNothing(t *testing.T) {
	bin := e2eBinary(t)
	for _, c := range []struct {
		name  string
		dir   string
		exist bool
	}{
		{"new folders", "a/b/model", false},
		{"empty folder", "model", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, c.dir)
			if c.exist {
				plantFiles(t, root, c.dir+"/")
			}
			before := folderTree(t, root)
			// ulimit -f: 2048 blocks of 512 or 1024 bytes, ample for
			// config.json, not for model.safetensors.
			cmd := exec.Command("sh", "-c", `ulimit -f 2048 && exec "$0" "$@"`, bin, "model", "random", "b32", dir, "--dtype", "f16")
			cmd.Env = append(os.Environ(), "CLIPIDX_MODEL=", "CLIPIDX_DB=")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(errb.String(), "file too large") || !strings.Contains(errb.String(), "nothing of the model is left") {
				t.Errorf("model random over the size limit: %v, exit %d, stderr %q", err, code, errb.String())
			}
			if after := folderTree(t, root); !slices.Equal(before, after) {
				t.Errorf("after the failed write the folder holds %q, want %q as before", after, before)
			}
		})
	}
}

// TestModelRandomInterrupted: Ctrl-C or SIGTERM while model random writes
// its weights exits 130 or 143 and leaves no file (no 420 MB hidden
// temporary file), and no folder it made.
func TestModelRandomInterrupted(t *testing.T) {
	bin := e2eBinary(t)
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		code  int
		exist bool
	}{
		{"SIGINT into a new folder", syscall.SIGINT, 130, false},
		{"SIGTERM into an empty folder", syscall.SIGTERM, 143, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "model")
			if c.exist {
				plantFiles(t, root, "model/")
			}
			before := folderTree(t, root)
			cmd := exec.Command(bin, "model", "random", "b32", dir)
			stderr, code := signalWhen(t, cmd, c.sig, func() bool {
				writing := false
				filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err == nil && strings.HasPrefix(d.Name(), ".model.safetensors.tmp") {
						writing = true
					}
					return nil
				})
				return writing
			})
			if code != c.code || !strings.Contains(stderr, "interrupted") {
				t.Errorf("model random stopped by %v: exit %d, stderr %q; want %d", c.sig, code, stderr, c.code)
			}
			if after := folderTree(t, root); !slices.Equal(before, after) {
				t.Errorf("after the stopped write the folder holds %q, want %q as before", after, before)
			}
		})
	}
}

// TestModelRandomRetryOverLeftovers: what a killed model random leaves
// (its hidden folder, or hf's hidden temporary files) does not block the
// same command again, which removes it and says so; a folder holding a
// config.json is still refused, its temporary file kept.
func TestModelRandomRetryOverLeftovers(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 0.3 GB model")
	}
	dir := filepath.Join(t.TempDir(), "b32")
	plantFiles(t, dir, ".model.safetensors.tmp123456", ".config.json.tmp99", ".random-model.tmp-77/config.json", ".random-model.tmp-77/.model.safetensors.tmp5", ".random-model.tmp-78/")
	_, stderr, code := runCLI(t, "model", "random", "b32", dir, "--dtype", "f16")
	if code != 0 || !strings.Contains(stderr, "removed what an interrupted model random had left") {
		t.Fatalf("model random over a killed run's leftovers: exit %d, stderr %q", code, stderr)
	}
	if got, want := folderTree(t, dir), []string{"config.json", "model.safetensors"}; !slices.Equal(got, want) {
		t.Errorf("folder holds %q, want %q", got, want)
	}

	other := t.TempDir()
	plantFiles(t, other, "config.json", ".model.safetensors.tmp1")
	_, stderr, code = runCLI(t, "model", "random", "b32", other, "--dtype", "f16")
	if code != 1 || !strings.Contains(stderr, "is not empty (it holds config.json)") {
		t.Errorf("model random into a folder with a config.json: exit %d, stderr %q", code, stderr)
	}
	if got, want := folderTree(t, other), []string{".model.safetensors.tmp1", "config.json"}; !slices.Equal(got, want) {
		t.Errorf("a refused run changed the folder: %q, want %q", got, want)
	}
}
