package hub_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/internal/hub"
)

// TestVerifySmallFile: with Verify, a file kept in git (its ETag the git
// blob SHA-1) is hashed again like an LFS file: damaged behind its
// sidecar's back (same size and modification time) it is downloaded
// again, intact it is skipped without a GET. Once Verify trusted the
// sidecar of any file without a SHA-256.
func TestVerifySmallFile(t *testing.T) {
	s, files := newHub(t)
	dir := t.TempDir()
	const name = "config.json"
	if _, err := hub.DownloadFile(context.Background(), repo, name, dir, quick(s)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(files[name].Data)
	bad[2] ^= 1
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	r, err := hub.DownloadFile(context.Background(), repo, name, dir, quick(s))
	if err != nil || !r.Skipped {
		t.Fatalf("without Verify the sidecar is trusted: %+v, %v", r, err)
	}
	opts := quick(s)
	opts.Verify = true
	if r, err = hub.DownloadFile(context.Background(), repo, name, dir, opts); err != nil || r.Skipped || r.Fetched != int64(len(files[name].Data)) {
		t.Fatalf("with Verify, a damaged %s: %+v, %v; want it downloaded again", name, r, err)
	}
	checkFiles(t, dir, files, name)

	s.ClearRequests()
	if r, err = hub.DownloadFile(context.Background(), repo, name, dir, opts); err != nil || !r.Skipped {
		t.Fatalf("with Verify, an intact %s: %+v, %v; want it skipped", name, r, err)
	}
	if n, _ := gets(s.Requests(), false); n != 0 {
		t.Errorf("%d GETs for an intact %s", n, name)
	}
}

// TestSmallFileWithoutSidecar: a file kept in git found in place without
// its sidecar (copied in by hand) is kept when its git blob SHA-1 is the
// hub's ETag, and downloaded again when it is not.
func TestSmallFileWithoutSidecar(t *testing.T) {
	s, files := newHub(t)
	const name = "merges.txt"
	for _, c := range []struct {
		what string
		data []byte
		skip bool
	}{
		{"intact", files[name].Data, true},
		{"damaged", append(bytes.Clone(files[name].Data[:len(files[name].Data)-1]), '!'), false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := hub.DownloadFile(context.Background(), repo, name, dir, quick(s))
		if err != nil || r.Skipped != c.skip {
			t.Errorf("%s %s without a sidecar: %+v, %v; want skipped %v", c.what, name, r, err, c.skip)
		}
		checkFiles(t, dir, files, name)
	}
}
