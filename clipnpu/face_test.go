package clipnpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
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
