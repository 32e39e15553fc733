package conformance_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// scaled is a backend whose image embeddings are multiplied by f: the
// direction is right, the size is not.
type scaled struct {
	clipnpu.Backend
	f float32
}

func (s scaled) EncodeImages(pixels []float32, n int) ([]float32, error) {
	out, err := s.Backend.EncodeImages(pixels, n)
	for i := range out {
		out[i] *= s.f
	}
	return out, err
}

const envScaled = "CONFORMANCE_TEST_SCALED_BACKEND"

// TestScaledBackend runs the suite on a reference backend whose image
// embeddings are 1 % too long; it only runs as TestSuiteSeesScale's child,
// which expects it to fail.
func TestScaledBackend(t *testing.T) {
	if os.Getenv(envScaled) != "1" {
		t.Skip("runs as TestSuiteSeesScale's child process")
	}
	conformance.Run(t, func(t *testing.T, dir string) clipnpu.Backend {
		b, err := clipnpu.Load(dir, clipnpu.Options{Device: "reference"})
		if err != nil {
			t.Fatal(err)
		}
		return scaled{b, 1.01}
	}, conformance.F32CPU())
}

// TestSuiteSeesScale: embeddings scaled by 1.01 keep a cosine of 1 to the
// reference, and the suite fails them (image embeddings only: the logits
// and batch comparisons do not see a uniform scale).
func TestSuiteSeesScale(t *testing.T) {
	fixtures.TinyModel(t) // skip here, not in the child, without the shared data
	cmd := exec.Command(os.Args[0], "-test.run", "^TestScaledBackend$", "-test.v")
	cmd.Env = append(os.Environ(), envScaled+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a backend whose image embeddings are scaled by 1.01:\n%s", out)
	}
	failed := regexp.MustCompile(`--- FAIL: TestScaledBackend/(\w+)`).FindAllStringSubmatch(string(out), -1)
	if len(failed) != 1 || failed[0][1] != "ImageEmbeddings" {
		t.Errorf("failed subtests %v, want ImageEmbeddings only:\n%s", failed, out)
	}
	if !strings.Contains(string(out), "relative error 0.01") || strings.Contains(string(out), ") < 0.99999") {
		t.Errorf("the failure does not name the relative error, or blames the cosine:\n%s", out)
	}
}
