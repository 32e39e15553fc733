package store

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReaderMappingHugePages checks that a reader's mapping of the index
// carries the 2 MiB page hint (VmFlags "hg" in /proc/self/smaps).
func TestReaderMappingHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages: nothing to advise")
	}
	path := filepath.Join(t.TempDir(), "hp.db")
	w := openW(t, path)
	var b Batch
	b.Put("/p/a.jpg", File{Hash: hashOf("a")}, vec(1, testID.Dim))
	commit(t, w, &b)
	closeW(t, w)

	r, err := OpenReader(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	real, err := filepath.EvalSymlinks(path) // smaps names the file by its real path
	if err != nil {
		t.Fatal(err)
	}
	flags := mappingFlags(t, real)
	if flags == nil {
		t.Fatalf("no mapping of %s in /proc/self/smaps while a reader is open", path)
	}
	if !slices.Contains(flags, "hg") {
		t.Errorf("reader's mapping of %s: VmFlags %v, want hg (MADV_HUGEPAGE)", path, flags)
	}
}

// mappingFlags is the VmFlags of this process's mapping of path, nil if
// it has none.
func mappingFlags(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 6 && strings.Contains(fields[0], "-"):
			in = fields[len(fields)-1] == path
		case in && len(fields) > 0 && fields[0] == "VmFlags:":
			return fields[1:]
		}
	}
	return nil
}
