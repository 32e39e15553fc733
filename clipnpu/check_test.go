package clipnpu_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestCheckFixture runs Check on the tiny-clip-h fixture: every stage
// runs and passes at the float32 gates, each result carries the measures
// behind it, and OnResult sees the results in the report's order.
func TestCheckFixture(t *testing.T) {
	dir := fixtures.TinyModel(t)
	var seen []clipnpu.CheckResult
	r, err := clipnpu.Check(dir, clipnpu.CheckOptions{
		OpenOptions: clipnpu.OpenOptions{Options: clipnpu.Options{Device: "cpu"}},
		OnResult:    func(res clipnpu.CheckResult) { seen = append(seen, res) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, r.Results) {
		t.Errorf("OnResult saw %d results, the report holds %d (or in another order)", len(seen), len(r.Results))
	}
	if r.Failed() != 0 || r.Passed() != 25 {
		t.Errorf("%d passed, %d failed, want 25 and 0:\n%s", r.Passed(), r.Failed(), messages(r))
	}
	if r.Info.Name != "tiny-clip-h" || r.Info.Device != clipnpu.DeviceCPU || r.Gates != compare.F32CPU() {
		t.Errorf("info %s on %s, gates %+v: want tiny-clip-h on cpu at the float32 gates", r.Info.Name, r.Info.Device, r.Gates)
	}
	// How many passed results each stage has, and that each carries its
	// measures.
	want := map[clipnpu.CheckStage]int{
		clipnpu.StageTokenizer: 12, clipnpu.StagePixels: 7, clipnpu.StageImageTower: 1, clipnpu.StageTextTower: 1,
		clipnpu.StageZeroShot: 2, clipnpu.StagePrompts: 1, clipnpu.StageEndToEnd: 1,
	}
	got := map[clipnpu.CheckStage]int{}
	for _, res := range r.Results {
		if res.Status != clipnpu.CheckOK {
			continue
		}
		got[res.Stage]++
		switch res.Stage {
		case clipnpu.StagePixels:
			if res.Values == nil || res.Values.Differ != 0 || res.Values.Values != 3*224*224 || res.RefSet != 0 {
				t.Errorf("pixels result without its measures: %+v", res)
			}
		case clipnpu.StageImageTower, clipnpu.StageTextTower:
			if res.Embeddings == nil || res.Gate == nil || res.Embeddings.Rows != 7 || len(res.Embeddings.Check(*res.Gate)) != 0 {
				t.Errorf("%s result without its measures: %+v", res.Stage, res)
			}
		case clipnpu.StageZeroShot, clipnpu.StageEndToEnd:
			if res.Logits == nil || res.Logits.Top1Agree != 7 {
				t.Errorf("%s result without its measures: %+v", res.Stage, res)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("passed results by stage %v, want %v", got, want)
	}
}

// TestCheckSeesScale: image embeddings 1 % longer than the reference keep
// every cosine at 1; Check fails the image tower on its relative error and
// passes everything else.
func TestCheckSeesScale(t *testing.T) {
	dir := copyFolder(t, fixtures.TinyModel(t))
	scaleTensor(t, dir, "ref.0.image_embeds", 7*32, 1.01)
	r, err := clipnpu.Check(dir, clipnpu.CheckOptions{OpenOptions: clipnpu.OpenOptions{Options: clipnpu.Options{Device: "cpu"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() != 1 || r.Passed() != 24 {
		t.Fatalf("%d failed, %d passed, want 1 and 24:\n%s", r.Failed(), r.Passed(), messages(r))
	}
	for _, res := range r.Results {
		if res.Status != clipnpu.CheckFail {
			continue
		}
		s := res.Embeddings
		if res.Stage != clipnpu.StageImageTower || s == nil || res.Gate == nil {
			t.Fatalf("failed result %+v, want the image tower with its measures", res)
		}
		if s.MinCosine < res.Gate.MinCosine || s.MaxRelErr < 0.009 || s.MaxRelErr > 0.011 || !strings.Contains(res.Message, "relative error 0.0099 (row ") {
			t.Errorf("cosine %.7f, rel err %.4g, message %q: want the cosine passed and a relative error of ~0.0099 named", s.MinCosine, s.MaxRelErr, res.Message)
		}
	}
}

// TestCheckNoRefSets: a bundle with no refset records checks the
// tokenizer only, never loads a model (this one has none), and fails for
// the references it lacks.
func TestCheckNoRefSets(t *testing.T) {
	dir := t.TempDir()
	w := bundle.NewWriter()
	w.I32("tok.0.ids", []int{2}, []int32{1, 2})
	if err := w.Write(dir); err != nil {
		t.Fatal(err)
	}
	r, err := clipnpu.Check(dir, clipnpu.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, res := range r.Results {
		stages = append(stages, string(res.Stage)+":"+strconv.Itoa(int(res.Status)))
	}
	// bundle info, the tokenizer's failure (no vocabulary), no refsets.
	want := []string{"bundle:0", "tokenizer:2", "bundle:2"}
	if !reflect.DeepEqual(stages, want) || r.Passed() != 0 || r.Failed() != 2 || r.Info.Name != "" {
		t.Errorf("results %v (info %q), want %v:\n%s", stages, r.Info.Name, want, messages(r))
	}
	if !strings.Contains(r.Results[2].Message, "no refset records") {
		t.Errorf("last result %q", r.Results[2].Message)
	}
}

// TestCheckNotABundle: a folder without a manifest is an error that wraps
// bundle.ErrNotBundle and names the file.
func TestCheckNotABundle(t *testing.T) {
	r, err := clipnpu.Check(t.TempDir(), clipnpu.CheckOptions{})
	if r != nil || !errors.Is(err, bundle.ErrNotBundle) || !strings.Contains(err.Error(), "has no manifest.txt") {
		t.Errorf("report %v, error %v: want ErrNotBundle naming manifest.txt", r, err)
	}
}

func messages(r *clipnpu.CheckReport) string {
	var b strings.Builder
	for _, res := range r.Results {
		b.WriteString(string(res.Stage) + " " + strconv.Itoa(int(res.Status)) + " " + res.Message + "\n")
	}
	return b.String()
}

// copyFolder copies a model folder, subfolders included, so a test can
// damage it.
func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// scaleTensor multiplies the first n values of the float32 tensor name in
// a bundle's tensors.bin by f, in place.
func scaleTensor(t *testing.T, dir, name string, n int, f float32) {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(dir, "tensors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	off := int64(-1)
	for _, line := range strings.Split(string(index), "\n") {
		if fs := strings.Fields(line); len(fs) == 5 && fs[0] == name {
			if off, err = strconv.ParseInt(fs[3], 10, 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	if off < 0 {
		t.Fatalf("no tensor %s in tensors.txt", name)
	}
	file, err := os.OpenFile(filepath.Join(dir, "tensors.bin"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	b := make([]byte, 4*n)
	if _, err := file.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v*f))
	}
	if _, err := file.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
