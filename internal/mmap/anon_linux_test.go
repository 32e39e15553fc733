package mmap

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// mappingOf returns the smaps fields (name → kB, and "VmFlags") of the
// mapping of this process that contains address p, nil if none does.
func mappingOf(t *testing.T, p uintptr) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	var cur map[string]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if cur != nil {
				return cur
			}
			if err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < b {
				cur = map[string]string{}
			}
			continue
		}
		if cur != nil {
			cur[strings.TrimSuffix(fields[0], ":")] = strings.Join(fields[1:], " ")
		}
	}
	return cur
}

// TestAnon checks that Anon's memory is zeroed, writable, outside the heap
// in a mapping of its own that asks for huge pages (VmFlags "hg") and gets
// them where the kernel gives them to memory that asks, and that free
// unmaps it.
func TestAnon(t *testing.T) {
	const n = 9 << 20
	b, free, err := Anon(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != n {
		t.Fatalf("Anon(%d) gave %d bytes", n, len(b))
	}
	for i := 0; i < n; i += 4096 {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d, want zeroed memory", i, b[i])
		}
		b[i] = 1
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	m := mappingOf(t, p)
	if m == nil {
		t.Fatal("no mapping holds Anon's memory")
	}
	if flags := " " + m["VmFlags"] + " "; !strings.Contains(flags, " hg ") {
		t.Errorf("Anon's mapping: VmFlags %q, want hg (MADV_HUGEPAGE)", m["VmFlags"])
	}
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	size, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	switch {
	case !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]"):
		t.Logf("transparent huge pages are off here (%q): huge pages not checked", strings.TrimSpace(string(mode)))
	case strings.TrimSpace(string(size)) != fmt.Sprint(2<<20):
		t.Logf("huge pages of %s bytes here: %d bytes may hold none; not checked", strings.TrimSpace(string(size)), n)
	case m["AnonHugePages"] == "0 kB":
		// 9 MiB hold at least three aligned 2 MiB pages, and under
		// "madvise" the kernel compacts memory to find them.
		t.Errorf("Anon's mapping got no huge page (AnonHugePages %s, THP %q)", m["AnonHugePages"], strings.TrimSpace(string(mode)))
	}
	if err := free(); err != nil {
		t.Fatal(err)
	}
	if m := mappingOf(t, p); m != nil && m["VmFlags"] != "" && strings.Contains(" "+m["VmFlags"]+" ", " hg ") && m["Size"] == fmt.Sprintf("%d kB", n>>10) {
		t.Error("free left Anon's mapping in place")
	}
}
