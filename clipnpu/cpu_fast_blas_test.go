package clipnpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/gemm"
)

type fakeBLASPool struct {
	err    error
	called bool
}

func (p *fakeBLASPool) UseSystemBLAS() error { p.called = true; return p.err }
func (p *fakeBLASPool) SystemBLAS() string {
	if p.called && p.err == nil {
		return "/usr/lib/libopenblas.so.0"
	}
	return ""
}

// TestUseSystemBLAS: without an assembly kernel the fast path asks for the
// system BLAS and says which GEMM runs; with one it never does.
func TestUseSystemBLAS(t *testing.T) {
	p := &fakeBLASPool{}
	if note := useSystemBLAS(p, true); note != "" || p.called {
		t.Errorf("accelerated: note %q, called %v", note, p.called)
	}
	p = &fakeBLASPool{}
	if note := useSystemBLAS(p, false); !p.called || !strings.Contains(note, "system BLAS /usr/lib/libopenblas.so.0") {
		t.Errorf("not accelerated, BLAS present: note %q, called %v", note, p.called)
	}
	p = &fakeBLASPool{err: errors.New("load BLAS: not installed")}
	if note := useSystemBLAS(p, false); !p.called || !strings.Contains(note, "portable Go kernel") || !strings.Contains(note, "not installed") {
		t.Errorf("not accelerated, no BLAS: note %q", note)
	}
}

// TestFastNoteNamesGEMM: the fast backend's Info says nothing about the
// GEMM when our assembly runs, and names what runs instead otherwise (the
// purego build, or a CPU without AVX2/FMA).
func TestFastNoteNamesGEMM(t *testing.T) {
	b, err := NewRandom(smallConfig(), 1, "f32", Options{Device: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	note := b.Info().DeviceNote
	if gemm.Accelerated() != (note == "") || (note != "" && !strings.HasPrefix(note, "GEMM: ")) {
		t.Errorf("accelerated %v, DeviceNote %q", gemm.Accelerated(), note)
	}
}
