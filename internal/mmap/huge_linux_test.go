package mmap

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// anonHuge returns the process's AnonHugePages in bytes.
func anonHuge(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no /proc/self/smaps_rollup: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "AnonHugePages:" {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("smaps_rollup has no AnonHugePages line")
	return 0
}

func TestHugePages(t *testing.T) {
	if HugePages(make([]byte, hugePage-1)) != 0 {
		t.Error("advised part of a slice shorter than a huge page")
	}
	b := make([]byte, 5*hugePage+12345)
	p := uintptr(unsafe.Pointer(&b[0]))
	head := int((hugePage - p%hugePage) % hugePage)
	want := (len(b) - head) / hugePage * hugePage
	before := anonHuge(t)
	got := HugePages(b)
	if got != want {
		t.Fatalf("HugePages advised %d bytes of a %d-byte slice %d bytes before a 2 MiB boundary, want %d", got, len(b), head, want)
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Skipf("transparent huge pages are off here (%q): the advice was given, no huge page to check", strings.TrimSpace(string(mode)))
	}
	// Under "madvise" (this project's machines) only advised memory gets
	// huge pages, and the kernel compacts memory to find them.
	if grew := anonHuge(t) - before; grew < hugePage {
		t.Errorf("the kernel gave no huge page to %d advised bytes (AnonHugePages grew by %d; THP %q)", got, grew, strings.TrimSpace(string(mode)))
	}
}
