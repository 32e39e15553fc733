package preprocess

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWASMMemoryOffHeap decodes a 1600x1200 HEIC, whose decoder grows its
// linear memory to tens of MB, and checks that the Go heap saw little more
// than the pixels copied out: the linear memory lives in an
// mmap.Reservation and grows in place. With wazero's own memory (a heap
// slice grown by append), every growth allocated and copied it again.
func TestWASMMemoryOffHeap(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("a 32-bit process keeps the decoders' memory on the heap (wasmAllocator)")
	}
	data := heifEncode(t, photoLike(1600, 1200), "-q", "80", "-p", "preset=fast")
	ctx := context.Background()
	decode := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		img, err := libheifDecode(ctx, data, nil)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 1600 || b.Dy() != 1200 {
			t.Fatalf("decoded %v, want 1600x1200", b)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	decode() // compiles the module
	heap := decode()
	// What the heap may see: the planes copied out of the instance (1.5
	// bytes a pixel at 4:2:0; 4 bounds any layout) and the input. The
	// instance's own memory holds the decoder's frames besides, several
	// times as much.
	bound := uint64(4*1600*1200 + len(data))
	wasmHeapOnly = true
	old := decode()
	wasmHeapOnly = false
	t.Logf("Go heap allocated by a decode: %.1f MB, %.1f MB with the linear memory on the heap", float64(heap)/1e6, float64(old)/1e6)
	if heap > bound {
		t.Errorf("the decode allocated %d bytes on the Go heap, want at most %d (4 bytes a pixel): the decoder's linear memory is on the heap", heap, bound)
	}
	if old <= bound {
		t.Errorf("with heap memory the decode allocated only %d bytes: this test no longer tells the two apart", old)
	}

	// The whole HEIC decode converts the pixels straight out of the
	// decoder's memory into packed RGB (3 bytes a pixel), without copying
	// libheif's RGBA (4 bytes a pixel) out first.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	img, err := heifDecode(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := img.(*packedRGB); !ok {
		t.Fatalf("heifDecode gave %T, want packed RGB", img)
	}
	whole := after.TotalAlloc - before.TotalAlloc
	t.Logf("Go heap allocated by heifDecode: %.1f MB", float64(whole)/1e6)
	if limit := uint64(7*1600*1200/2 + 3*len(data) + 1<<20); whole > limit {
		t.Errorf("heifDecode allocated %d bytes, want at most %d: the RGB image, the file, and little else", whole, limit)
	}

	// An AVIF too: libavif's RGBA (4 bytes a pixel) is converted where it
	// lies, not copied out first.
	avif := heifEncode(t, photoLike(1600, 1200), "-A", "-q", "60", "-p", "speed=9")
	if _, err := heifDecode(bytes.NewReader(avif)); err != nil { // compiles the module
		t.Fatal(err)
	}
	runtime.ReadMemStats(&before)
	img, err = heifDecode(bytes.NewReader(avif))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := img.(*packedRGB); !ok {
		t.Fatalf("heifDecode of an AVIF gave %T, want packed RGB", img)
	}
	whole = after.TotalAlloc - before.TotalAlloc
	t.Logf("Go heap allocated by heifDecode of an AVIF: %.1f MB", float64(whole)/1e6)
	if limit := uint64(3*1600*1200 + 3*len(avif) + 1<<20); whole > limit {
		t.Errorf("heifDecode of an AVIF allocated %d bytes, want at most %d: the RGB image, the file, and little else", whole, limit)
	}
}

// BenchmarkHEICMemory times the whole path of a 12 MP HEIC with the
// decoder's linear memory reserved (wasmMemory) and on the Go heap
// (wazero's own way), alternating the two, and reports the median process
// CPU time of each and their ratio:
//
//	go test ./preprocess -run XXX -bench HEICMemory -benchtime 6x
func BenchmarkHEICMemory(b *testing.B) {
	data := heic12MP(b)
	p := New(DefaultConfig(), Options{})
	if _, err := p.Bytes(data, "bench.heic"); err != nil { // compiles the module
		b.Fatal(err)
	}
	defer func() { wasmHeapOnly = false }()
	var reserved, heap []float64
	i := 0
	for b.Loop() {
		for _, h := range []bool{i%2 == 1, i%2 == 0} {
			wasmHeapOnly = h
			t0 := processCPU()
			if _, err := p.Bytes(data, "bench.heic"); err != nil {
				b.Fatal(err)
			}
			d := (processCPU() - t0).Seconds()
			if h {
				heap = append(heap, d)
			} else {
				reserved = append(reserved, d)
			}
		}
		i++
	}
	r, h := medianF(reserved), medianF(heap)
	b.ReportMetric(r, "reserved-cpu-s")
	b.ReportMetric(h, "heap-cpu-s")
	b.ReportMetric(r/h, "reserved/heap")
	b.Logf("CPU seconds a decode, reserved %s, heap %s", fmtSeconds(reserved), fmtSeconds(heap))
}

func medianF(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func fmtSeconds(x []float64) string {
	s := ""
	for _, v := range x {
		s += fmt.Sprintf(" %.2f", v)
	}
	return s + " (" + time.Duration(medianF(x)*1e9).Round(time.Millisecond).String() + " median)"
}

// TestWASMCodeCache compiles the HEIC decoder into a code cache that holds
// only what another version left (which must go), then loads it from there
// in a fresh module (as a later process would), then damages the kept
// code: every decode must give the same pixels, the damage must be
// reported by CodeCache and repaired (the entry kept again, so that the
// next load is clean), and a cache folder that cannot be created must
// leave decoding as it is without one.
func TestWASMCodeCache(t *testing.T) {
	data, err := os.ReadFile("testdata/heif/yuv420.heic")
	if err != nil {
		t.Fatal(err)
	}
	saved := heifModule
	defer func() { heifModule = saved; SetCodeCache("") }()
	decode := func(label string) []byte {
		t.Helper()
		heifModule = &wasmModule{gz: &heifWASMgz} // compiled afresh, as in a new process
		img, err := libheifDecode(context.Background(), data, nil)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		var px []byte
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, a := img.At(x, y).RGBA()
				px = append(px, byte(r>>8), byte(g>>8), byte(bl>>8), byte(a>>8))
			}
		}
		return px
	}
	dir := filepath.Join(t.TempDir(), "code")
	SetCodeCache("")
	want := decode("no cache")

	// What another version left (a decoder this build does not embed) goes;
	// what is not the cache's stays.
	stale, other := filepath.Join(dir, "0badc0de"), filepath.Join(dir, "notes")
	for _, d := range []string{stale, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(stale+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	SetCodeCache(dir)
	if got := decode("empty cache"); !slices.Equal(got, want) {
		t.Fatal("pixels differ when compiled into the cache")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the subfolder of a decoder not embedded is still there (%v)", err)
	}
	if _, err := os.Stat(stale + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock file of a decoder not embedded is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(other, "f")); err != nil {
		t.Errorf("a folder that is not the cache's was touched: %v", err)
	}
	if err := os.RemoveAll(other); err != nil {
		t.Fatal(err)
	}
	entries := cacheEntries(t, dir)
	if len(entries) == 0 {
		t.Fatalf("nothing kept in %s", dir)
	}
	if _, size, err := CodeCache(); size <= 0 || err != nil {
		t.Fatalf("CodeCache: %d bytes, %v; want the kept code and no error", size, err)
	}
	if got := decode("loaded from the cache"); !slices.Equal(got, want) {
		t.Fatal("pixels differ when loaded from the cache")
	}

	// Damage the machine code of every entry (wazero checks a CRC of it).
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(b) / 3; i < len(b)/3+64; i++ {
			b[i] ^= 0x5a
		}
		if err := os.WriteFile(e, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := decode("damaged cache"); !slices.Equal(got, want) {
		t.Fatal("pixels differ after the cache was damaged")
	}
	if _, _, err := CodeCache(); err == nil {
		t.Error("CodeCache reports no problem after a damaged entry")
	}
	SetCodeCache(dir) // clears the note
	if got := decode("repaired cache"); !slices.Equal(got, want) {
		t.Fatal("pixels differ from the repaired cache")
	}
	if _, size, err := CodeCache(); size <= 0 || err != nil {
		t.Errorf("after the repair CodeCache gives %d bytes, %v; want the code kept again, no error", size, err)
	}

	// A cache folder under a file cannot be created.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	SetCodeCache(filepath.Join(file, "code"))
	if got := decode("unusable folder"); !slices.Equal(got, want) {
		t.Fatal("pixels differ with an unusable cache folder")
	}
	if _, _, err := CodeCache(); err == nil {
		t.Error("CodeCache reports no problem with a folder under a file")
	}
}

// cacheEntries lists the regular files under dir but the lock files
// beside the entries' folders (empty: nothing of the code).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasSuffix(p, ".lock") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
