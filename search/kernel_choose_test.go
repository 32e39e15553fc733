package search

import (
	"slices"
	"strings"
	"testing"
)

// TestSetKernelByName: every kernel ScanKernels names can be chosen by
// name and new queries use it; a kernel the CPU lacks is refused and
// changes nothing; "" restores the default.
func TestSetKernelByName(t *testing.T) {
	old := kernel
	t.Cleanup(func() { kernel = old })
	names := ScanKernels()
	if len(names) == 0 || names[0] != "go" || !slices.Contains(names, DefaultKernel()) {
		t.Fatalf("ScanKernels() = %v, default %q", names, DefaultKernel())
	}
	for _, n := range names {
		if err := SetKernel(n); err != nil {
			t.Fatalf("SetKernel(%q): %v", n, err)
		}
		if kernel.name() != n || newHiQuery([]float32{1}).kernel != kernel {
			t.Errorf("SetKernel(%q): kernel %v", n, kernel)
		}
	}
	before := kernel
	if err := SetKernel("sse9"); err == nil || !strings.Contains(err.Error(), "sse9") || kernel != before {
		t.Errorf("SetKernel(sse9) = %v, kernel %v", err, kernel)
	}
	if err := SetKernel(""); err != nil || kernel != defaultKernel() {
		t.Errorf("SetKernel(\"\") = %v, kernel %v", err, kernel)
	}
}

// TestScanTrials: one trial per assembly kernel (the Go one only where it
// is alone), each scoring the same vectors without touching the current
// kernel.
func TestScanTrials(t *testing.T) {
	ts := ScanTrials()
	ks := ScanKernels()
	want := len(ks)
	if want > 1 {
		want-- // the Go kernel is not timed against assembly
	}
	if len(ts) != want {
		t.Fatalf("%d trials for kernels %v", len(ts), ks)
	}
	before := kernel
	for _, tr := range ts {
		if tr.Bytes != 2*trialRows*trialDim {
			t.Errorf("%s: %v bytes", tr.Name, tr.Bytes)
		}
		tr.Run()
	}
	if kernel != before {
		t.Errorf("the trials changed the kernel to %v", kernel)
	}
}
