package cpu

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/internal/gemm"
)

// cacheInputs are a few images and prompts for packTestConfig.
func cacheInputs() (px []float32, ids []int32, n int) {
	cfg := packTestConfig
	n = 2
	r := rand.New(rand.NewPCG(5, 6))
	S, T := cfg.Vision.ImageSize, cfg.Text.Context
	px = make([]float32, n*3*S*S)
	for i := range px {
		px[i] = float32(r.NormFloat64())
	}
	ids = make([]int32, n*T)
	for i := range ids {
		ids[i] = int32(r.IntN(990))
	}
	for b := 0; b < n; b++ {
		ids[b*T+4+b] = 999
	}
	return px, ids, n
}

// embedCacheInputs is b's image and text embeddings of cacheInputs.
func embedCacheInputs(t *testing.T, b core.Backend) [][]float32 {
	t.Helper()
	px, ids, n := cacheInputs()
	return embedBoth(t, b, px, ids, n)
}

// embedBoth is b's embeddings of n images px and n prompts ids.
func embedBoth(t *testing.T, b core.Backend, px []float32, ids []int32, n int) [][]float32 {
	t.Helper()
	im, err := b.EncodeImages(px, n)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := b.EncodeTexts(ids, n)
	if err != nil {
		t.Fatal(err)
	}
	return [][]float32{im, tx}
}

// bf16OrPortable lets bf16 run on a CPU without a bf16 kernel, on the
// portable Go kernel, until the test ends.
func bf16OrPortable(t *testing.T) {
	if _, err := gemm.BF16Kernel(); err != nil {
		if err := gemm.SetBF16Kernel("go"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gemm.SetBF16Kernel("") })
	}
}

// allMatrices is how many weight matrices packTestConfig's towers have.
var allMatrices = int64(packTestConfig.Vision.Layers*6 + 2 + packTestConfig.Text.Layers*6 + 1)

// cacheRun is one start of the fast path on packTestConfig's random model
// (seed), in precision, with the packed-weights folder dir: its image and
// text embeddings over two passes each, the matrices it packed in memory,
// and its Info.DeviceNote.
type cacheRun struct {
	out    [][]float32
	packed int64
	note   string
}

// (Without a folder, the float32 weights are packed in memory at the
// second pass: the reference for the products from a mapped file.)
func startCached(t *testing.T, seed uint64, precision, dir string) cacheRun {
	t.Helper()
	before := packCount.Load()
	b, err := NewFast(hf.RandomModel(packTestConfig, seed, core.F32, core.BothTowers, 2), core.Options{Threads: 2, Precision: precision, PackCache: dir, PackEarly: dir == ""})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var run cacheRun
	for range 2 {
		run.out = append(run.out, embedCacheInputs(t, b)...)
	}
	run.packed = packCount.Load() - before
	run.note = b.Info().DeviceNote
	return run
}

// withCachePrecision runs test for each precision that caches on this
// CPU: bf16 (on the portable kernel where the CPU has none), and f32 with
// packing taken as paying (as on the AVX-512 kernel).
func withCachePrecision(t *testing.T, test func(t *testing.T, precision string)) {
	bf16OrPortable(t)
	prevOff, prevPays := packOff, packPays
	packOff, packPays = false, func() bool { return true }
	t.Cleanup(func() { packOff, packPays = prevOff, prevPays })
	for _, p := range []string{"bf16", "f32"} {
		t.Run(p, func(t *testing.T) { test(t, p) })
	}
}

// packFiles lists the packed files in dir.
func packFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"+packExt))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameOutputs(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("%s: output %d differs from packing in memory", what, i)
		}
	}
}

// TestPackCacheSecondStartMaps checks that the first start packs and
// writes one file per tower, that a second start maps them and packs
// nothing, and that products from the mapped panels equal, bit for bit,
// those from panels packed in memory with no cache.
func TestPackCacheSecondStartMaps(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		dir := t.TempDir()
		mem := startCached(t, 1, precision, "")
		first := startCached(t, 1, precision, dir)
		if first.packed != allMatrices || mem.packed != allMatrices {
			t.Fatalf("first start packed %d matrices, and %d without a cache, want %d", first.packed, mem.packed, allMatrices)
		}
		if files := packFiles(t, dir); len(files) != 2 {
			t.Fatalf("first start wrote %v, want one file per tower", files)
		}
		second := startCached(t, 1, precision, dir)
		if second.packed != 0 {
			t.Errorf("second start packed %d matrices, want 0 (mapped)", second.packed)
		}
		if !strings.Contains(second.note, "mapped from "+dir) {
			t.Errorf("second start's note %q does not say it mapped the cache", second.note)
		}
		sameOutputs(t, "first start", first.out, mem.out)
		sameOutputs(t, "mapped start", second.out, mem.out)
	})
}

// TestPackCacheKeyChangeRebuilds checks that a change of the weights'
// hash, of the packing version or of the float32 kernel's layout makes
// the next start pack again under a new file, beside the other key's
// (used lately: removeStale keeps it).
func TestPackCacheKeyChangeRebuilds(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		changes := []struct {
			name   string
			seed   uint64
			change func() (undo func())
		}{
			{"weights", 2, func() func() { return func() {} }},
			{"version", 1, func() func() {
				packVersion = PackVersion + "-next"
				return func() { packVersion = PackVersion }
			}},
		}
		if precision == "f32" {
			changes = append(changes, struct {
				name   string
				seed   uint64
				change func() (undo func())
			}{"kernel layout", 1, func() func() {
				if err := gemm.SetKernel("go"); err != nil {
					t.Fatal(err)
				}
				return func() { gemm.SetKernel("") }
			}})
		}
		for _, c := range changes {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				startCached(t, 1, precision, dir)
				old := packFiles(t, dir)
				layout := gemm.PackLayout()
				undo := c.change()
				defer undo()
				if c.name == "kernel layout" && gemm.PackLayout() == layout {
					t.Skip("the default kernel is the Go kernel: no other layout to switch to")
				}
				again := startCached(t, c.seed, precision, dir)
				if again.packed == 0 {
					t.Fatalf("start after a %s change packed nothing", c.name)
				}
				now := packFiles(t, dir)
				added := slices.DeleteFunc(slices.Clone(now), func(p string) bool { return slices.Contains(old, p) })
				if len(added) != 2 || len(now) != 4 {
					t.Fatalf("after a %s change the folder holds %v (was %v), want two new files beside them", c.name, now, old)
				}
				if mapped := startCached(t, c.seed, precision, dir); mapped.packed != 0 {
					t.Errorf("the rebuilt files were not mapped (packed %d)", mapped.packed)
				}
			})
		}
	})
}

// TestPackCacheDamagedRebuilds checks that a truncated, altered (header,
// checksum or data), foreign or empty file is not trusted: the start packs again, with the same
// results bit for bit, and writes a file that the next start maps.
func TestPackCacheDamagedRebuilds(t *testing.T) {
	damages := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-packAlign] }},
		{"header byte", func(b []byte) []byte { b[len(packMagic)+2] ^= 1; return b }},
		{"checksum", flipChecksum},
		{"data", func(b []byte) []byte { // the last matrix's last page, always sampled
			for i := len(b) - packAlign; i < len(b); i++ {
				b[i] ^= 0xff
			}
			return b
		}},
		{"foreign", func(b []byte) []byte { return []byte("{\"not\": \"a packed file\"}\n") }},
		{"empty", func(b []byte) []byte { return nil }},
	}
	withCachePrecision(t, func(t *testing.T, precision string) {
		mem := startCached(t, 1, precision, "")
		for _, d := range damages {
			t.Run(d.name, func(t *testing.T) {
				dir := t.TempDir()
				startCached(t, 1, precision, dir)
				for _, p := range packFiles(t, dir) {
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, d.damage(b), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				again := startCached(t, 1, precision, dir)
				if again.packed != allMatrices {
					t.Fatalf("start on %s files packed %d matrices, want %d", d.name, again.packed, allMatrices)
				}
				sameOutputs(t, d.name, again.out, mem.out)
				if mapped := startCached(t, 1, precision, dir); mapped.packed != 0 {
					t.Errorf("the rewritten files were not mapped (packed %d)", mapped.packed)
				}
			})
		}
	})
}

// flipChecksum changes the header checksum of a packed file's bytes.
func flipChecksum(b []byte) []byte {
	// The header ends with its checksum, followed by zeros up to the
	// first matrix: the last non-zero-padded byte is hard to find from
	// outside, so recompute where it ends from the key length and count.
	le := func(o int) int { return int(b[o]) | int(b[o+1])<<8 | int(b[o+2])<<16 | int(b[o+3])<<24 }
	o := len(packMagic) + 4
	o += 4 + le(o)
	o += 4 + 28*le(o)
	b[o] ^= 0x80
	return b
}

// TestPackCacheUnwritable checks that a cache folder that cannot be made
// costs only the packing: the start succeeds, with the results of packing
// in memory, and says why nothing was saved.
func TestPackCacheUnwritable(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		mem := startCached(t, 1, precision, "")
		run := startCached(t, 1, precision, filepath.Join(file, "packed"))
		sameOutputs(t, "unwritable cache", run.out, mem.out)
		if run.packed != allMatrices {
			t.Errorf("packed %d matrices, want %d", run.packed, allMatrices)
		}
		if !strings.Contains(run.note, "not saved") {
			t.Errorf("note %q does not say the packed weights were not saved", run.note)
		}
	})
}

// TestWritePackFileAtomic checks that the file appears under its name only
// once whole: not while it is written, not after a failed write (which
// leaves an older file as it was), and that no temporary file stays.
func TestWritePackFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m-text-bf16-0"+packExt)
	shapes := []packShape{{2, 3, 100}, {4, 5, 5000}}
	data := func(i int) []byte {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s visible while being written (%v)", path, err)
		}
		return make([]byte, shapes[i].size)
	}
	if err := writePackFile(path, "k1", shapes, data); err != nil {
		t.Fatal(err)
	}
	mp, parts, err := openPackFile(path, "k1", shapes)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || len(parts[1]) != 5000 {
		t.Errorf("parts of %v", parts)
	}
	mp.Close()
	before, _ := os.ReadFile(path)
	short := func(i int) []byte { return make([]byte, shapes[i].size/(i+1)) } // the second too short: fails midway
	if err := writePackFile(path, "k2", shapes, short); err == nil {
		t.Fatal("a write with a short matrix succeeded")
	}
	if after, _ := os.ReadFile(path); !slices.Equal(after, before) {
		t.Error("a failed write changed the file in place")
	}
	if _, _, err := openPackFile(path, "k2", shapes); err == nil {
		t.Error("the file of a failed write opens under its key")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("folder holds %d entries after a failed write, want 1 (no temporary file)", len(ents))
	}
}

// TestRemoveStaleKeepsOtherGroups checks that writing a group's file
// keeps the group's files of other keys used lately, removes its old
// temporary files, and nothing of a group whose name begins with it.
func TestRemoveStaleKeepsOtherGroups(t *testing.T) {
	dir := t.TempDir()
	names := map[string]bool{ // name → removed
		"m-text-bf16-0123456789abcdef.pack":          false, // kept
		"m-text-bf16-fedcba9876543210.pack":          false, // another key's, used lately
		"m-text-bf16-from-f16-0123456789abcdee.pack": false,
		"m-image-bf16-0123456789abcdee.pack":         false,
		"m-text-bf16-0123456789abcdee.pack.tmp123":   true,  // old
		"m-text-bf16-0123456789abcded.pack.tmp456":   false, // being written
		"notes.txt": false,
	}
	for name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "m-text-bf16-0123456789abcdee.pack.tmp123"), old, old); err != nil {
		t.Fatal(err)
	}
	removeStale(dir, "m-text-bf16", filepath.Join(dir, "m-text-bf16-0123456789abcdef.pack"))
	for name, removed := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
}

// TestSampleSumSeesDamagedRuns checks that the sampled checksum changes
// when any run of packSampleStride pages is altered, wherever it starts,
// and when the last (partial) page is, and that it reads little of the
// data.
func TestSampleSumSeesDamagedRuns(t *testing.T) {
	b := make([]byte, 40*packSampleStride*packAlign/10+123) // 4 strides and a partial page
	for i := range b {
		b[i] = byte(i * 31)
	}
	want := sampleSum(b)
	run := packSampleStride * packAlign
	for _, at := range []int{0, 1, run / 3, run - 1, 2*run + 5, len(b) - run} {
		c := slices.Clone(b)
		for i := at; i < at+run; i++ {
			c[i] = 0
		}
		if sampleSum(c) == want {
			t.Errorf("a run of %d zeroed bytes at %d went unseen", run, at)
		}
	}
	c := slices.Clone(b)
	c[len(c)-1] ^= 1
	if sampleSum(c) == want {
		t.Error("the last byte's change went unseen")
	}
	c = slices.Clone(b)
	c[packAlign+7] ^= 1 // page 1: not sampled
	if sampleSum(c) != want {
		t.Error("page 1 is sampled: the stride is not what the format says")
	}
}
