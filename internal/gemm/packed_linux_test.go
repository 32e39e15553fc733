package gemm

import (
	"bufio"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// mapped reports whether some mapping of this process holds address p.
func mapped(t *testing.T, p uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lo, rest, _ := strings.Cut(sc.Text(), "-")
		hi, _, _ := strings.Cut(rest, " ")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < b {
			return true
		}
	}
	return false
}

// TestPackedMemoryFreed checks that packed weights (Pool.Pack, PackBF16)
// live outside the Go heap and are unmapped once they are collected.
func TestPackedMemoryFreed(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	w := randWeights(rand.New(rand.NewPCG(28, 29)), 1024, 1024, F32)
	bf, err := PackBF16(w)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Pack(w) {
		t.Fatal("Pack did not pack")
	}
	addrs := map[string]uintptr{
		"Pack":     uintptr(unsafe.Pointer(&w.packed.data[0])),
		"PackBF16": uintptr(unsafe.Pointer(&bf.data[0])),
	}
	for what, a := range addrs {
		if !mapped(t, a) {
			t.Fatalf("%s: the packed weights are in no mapping", what)
		}
	}
	w, bf = nil, nil
	for range 100 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		for what, a := range addrs {
			if !mapped(t, a) {
				delete(addrs, what)
			}
		}
		if len(addrs) == 0 {
			return
		}
	}
	t.Errorf("packed weights still mapped after they were collected: %v", addrs)
}
