package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/preprocess"
)

// TestPassClockSteady: the steady state starts at the end of the first
// pass and counts the photos of the passes after it.
func TestPassClockSteady(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := &passClock{
		start: []time.Time{at(0), at(2), at(4.5)},
		end:   []time.Time{at(1), at(3.5), at(5)},
		n:     []int{8, 8, 3},
	}
	photos, span, busy := p.steady()
	if photos != 11 || span != 4*time.Second || busy != 2*time.Second {
		t.Errorf("steady = %d photos, %v, busy %v; want 11, 4s, 2s", photos, span, busy)
	}
	p = &passClock{start: []time.Time{at(0)}, end: []time.Time{at(1)}, n: []int{8}}
	if photos, _, _ := p.steady(); photos != 0 {
		t.Errorf("one pass: %d steady photos, want 0", photos)
	}
}

// TestBenchBuildCommand runs `clipidx bench build` on the tiny fixture
// model over 17 JPEGs and a broken file: passes of 8, 8 and 1, so 9
// photos in the steady state; and refuses a folder too small for one.
func TestBenchBuildCommand(t *testing.T) {
	model := fixtures.TinyModel(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	photos := filepath.Join(t.TempDir(), "photos")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 17 {
		m := image.NewRGBA(image.Rect(0, 0, 96+i, 64))
		for j := range m.Pix {
			m.Pix[j] = byte(j*(i+3)) | 0x20
		}
		m.Set(i, i, color.RGBA{255, 0, 0, 255})
		var b bytes.Buffer
		if err := jpeg.Encode(&b, m, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(photos, fmt.Sprintf("p%02d.jpg", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(photos, "broken.jpg"), []byte("\xff\xd8\xff junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--model", model, "--device", "cpu", "--precision", "f32", "bench", "build", photos, "--runs", "2", "--passes", "1", "--json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var r benchBuildResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(r.Runs) != 2 || r.Batch != 8 || r.Precision != "f32" {
		t.Fatalf("%d runs, batch %d, precision %q; want 2, 8, f32", len(r.Runs), r.Batch, r.Precision)
	}
	if want := preprocess.HEVCDecoder(); r.HEVC != want && !(want == "" && r.HEVC == "builtin") {
		t.Errorf("hevc %q, want %q", r.HEVC, want)
	}
	for i, run := range r.Runs {
		if run.Photos != 17 || run.Failed != 1 || run.SteadyPhotos != 9 {
			t.Errorf("run %d: %d photos, %d failed, %d steady; want 17, 1, 9", i, run.Photos, run.Failed, run.SteadyPhotos)
		}
		if !(run.PhotoS > 0) || !(run.ModelImageS > 0) || !(run.WallS > run.PhotoS) || !(run.PassBusyShare > 0 && run.PassBusyShare <= 1) {
			t.Errorf("run %d: %+v", i, run)
		}
		if got := run.ModelImageS / run.PhotoS; got != run.ModelShare {
			t.Errorf("run %d: model share %g, want %g", i, run.ModelShare, got)
		}
		if run.SteadyPasses != 2 || run.WholePhotoS != run.WallS/17 || run.WholeModelShare != run.ModelImageS/run.WholePhotoS {
			t.Errorf("run %d: %d steady passes, whole build %g s a photo, share %g; want 2, %g, %g", i,
				run.SteadyPasses, run.WholePhotoS, run.WholeModelShare, run.WallS/17, run.ModelImageS/run.WholePhotoS)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// The text output gives the whole build beside the steady state, and
	// says that two passes after the first are too few to trust it.
	root = newRoot()
	out.Reset()
	root.SetOut(&out)
	root.SetArgs([]string{"--model", model, "--device", "cpu", "--precision", "f32", "bench", "build", photos, "--runs", "1", "--passes", "1"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"whole build, loading included:", "note     the steady state spans 2 passes after the first", "HEIC     HEVC decoded by "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	few := filepath.Join(t.TempDir(), "few")
	if err := os.MkdirAll(few, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(photos, "p00.jpg"))
	if err := os.WriteFile(filepath.Join(few, "a.jpg"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	root = newRoot()
	root.SetOut(&out)
	root.SetArgs([]string{"--model", model, "--device", "cpu", "bench", "build", few, "--runs", "1", "--passes", "1"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "at least 16 photos") {
		t.Errorf("one photo: error %v, want one asking for at least 16 photos", err)
	}
}
