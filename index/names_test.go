package index

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/preprocess"
)

// TestIsImageName: the walk picks up every format the preprocess package
// recognises, including those it reports as unsupported (JPEG XL,
// Photoshop), in any case, and nothing else.
func TestIsImageName(t *testing.T) {
	for name, want := range map[string]bool{
		"a.jpg": true, "a.JPEG": true, "a.tif": true, "a.heic": true, "a.jxl": true, "a.NEF": true,
		"a.psd": true, "a.PSD": true, "a.psb": true,
		"a.txt": false, "a.psd.txt": false, "psd": false, "a.xmp": false,
	} {
		if got := IsImageName(name); got != want {
			t.Errorf("IsImageName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestBuildReportsPhotoshop: Photoshop files are walked and failed as an
// unsupported format, naming it (as a PSD renamed .png always was), so
// that a build that decodes them retries them; never silently skipped.
func TestBuildReportsPhotoshop(t *testing.T) {
	d := t.TempDir()
	const psd, psb = "8BPS\x00\x01\x00\x00\x00\x00\x00\x00", "8BPS\x00\x02\x00\x00\x00\x00\x00\x00"
	files := map[string]string{"a.psd": psd, "b.PSD": psd, "c.psb": psb, "renamed.png": psd}
	for name, content := range files {
		write(t, filepath.Join(d, name), content)
	}
	o := opts(&fakeEnc{})
	o.Preprocess = preprocess.New(preprocess.DefaultConfig(), preprocess.Options{}).Bytes
	sum, err := Build(context.Background(), filepath.Join(t.TempDir(), "i.db"), []string{d}, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != len(files) {
		t.Errorf("%d failures, want %d: %v", sum.Failed, len(files), sum.Failures)
	}
	for _, f := range sum.Failures {
		if !strings.Contains(f.Error, ErrUnsupported.Error()+": Photoshop PSD") {
			t.Errorf("%s: %q, want an unsupported Photoshop PSD", filepath.Base(f.Path), f.Error)
		}
	}
}
