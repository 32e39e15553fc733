package clipnpu

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/preprocess"
)

// TestDescribeAndPrepare: the face describes itself (what an index records
// is made from that outside), and a query's Prepare loads nothing once its
// context is cancelled, then loads the tower it needs.
func TestDescribeAndPrepare(t *testing.T) {
	m, err := Open(fixtures.TinyModel(t), OpenOptions{Options: Options{Device: "cpu"}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d := m.Describe(true)
	info := m.Info()
	if d.Name != info.Name || d.Name == "" || d.WeightsHash != info.WeightsHash || d.Dim != info.Dim || !d.EXIF ||
		!strings.HasPrefix(d.Preprocess, preprocess.Version+"/") || m.Describe(false).EXIF {
		t.Errorf("Describe: %+v (info %+v)", d, info)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Prepare(ctx, true, false, true); !errors.Is(err, context.Canceled) || m.Loaded() {
		t.Errorf("Prepare with a cancelled context: %v, loaded %v", err, m.Loaded())
	}
	if err := m.Prepare(context.Background(), true, false, false); err != nil || !m.Loaded() {
		t.Errorf("Prepare: %v, loaded %v", err, m.Loaded())
	}
}

// closeWatch is a backend whose Close tells the test.
type closeWatch struct {
	Backend
	closed func()
	once   sync.Once
}

func (c *closeWatch) Close() error {
	c.once.Do(c.closed)
	return c.Backend.Close()
}

// TestCheckBF16AfterF32: a check that compares bf16 with float32 loads the
// bf16 model only once the float32 one is closed, so that the two are
// never held at once (once both were loaded for the whole check: 6 GB for
// ViT-H/14), and still reports each tower's bf16 cosine.
func TestCheckBF16AfterF32(t *testing.T) {
	dir := fixtures.TinyModel(t)
	if _, err := gemm.BF16Kernel(); err != nil { // an AVX2-only CPU: bf16 on the portable kernel
		if err := gemm.SetBF16Kernel("go"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gemm.SetBF16Kernel("") })
	}
	var live, most int
	var precisions []string
	loadModel = func(dir string, opts Options) (Backend, error) {
		b, err := Load(dir, opts)
		if err != nil {
			return nil, err
		}
		live++
		most = max(most, live)
		precisions = append(precisions, b.Info().Precision)
		return &closeWatch{Backend: b, closed: func() { live-- }}, nil
	}
	t.Cleanup(func() { loadModel = Load })
	r, err := Check(dir, CheckOptions{OpenOptions: OpenOptions{Options: Options{Device: "cpu"}}, CompareBF16: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() != 0 {
		t.Errorf("%d checks failed", r.Failed())
	}
	if !slices.Equal(precisions, []string{"f32", "bf16"}) || most != 1 || live != 0 {
		t.Errorf("loaded %v, at most %d at once, %d left open: want f32 then bf16, one at a time, none left", precisions, most, live)
	}
	for _, tower := range []string{"image", "text"} {
		found := false
		for _, res := range r.Results {
			if res.Stage != StageImageTower && res.Stage != StageTextTower || !strings.Contains(res.Message, tower+" tower in bf16 vs float32") {
				continue
			}
			found = true
			if res.Status != CheckInfo || res.RefSet != 0 || res.Embeddings == nil || res.Embeddings.MinCosine < 0.99 {
				t.Errorf("%s tower: %+v", tower, res)
			}
		}
		if !found {
			t.Errorf("no bf16 comparison for the %s tower", tower)
		}
	}
}
