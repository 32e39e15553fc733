package cpu

import (
	"encoding/binary"
	"encoding/json"
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

// The life of packed files: which weights file they belong to, which of
// them stay, and what a start that cannot keep them says.

// startModel is startCached for the model in the folder model, loaded as
// stored.
func startModel(t *testing.T, model, precision, dir string) cacheRun {
	t.Helper()
	m, err := hf.LoadModel(model, core.BothTowers, hf.KeepStored, 2)
	if err != nil {
		t.Fatal(err)
	}
	before := packCount.Load()
	b, err := NewFast(m, core.Options{Threads: 2, Precision: precision, PackCache: dir, PackEarly: dir == ""})
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

// weightsHash is the sampled hash of the model folder's weights.
func weightsHash(t *testing.T, model string) string {
	t.Helper()
	info, err := hf.IdentifyFolder(model, core.BothTowers, hf.KeepStored, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	return info.WeightsHash
}

// writeWeights writes b over the file at path in place (as cp does) and
// gives it the modification time at.
func writeWeights(t *testing.T, path string, b []byte, at time.Time) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// tensorBytes is where tensor name's bytes lie in the safetensors file b.
func tensorBytes(t *testing.T, b []byte, name string) (begin, end int) {
	t.Helper()
	n := int(binary.LittleEndian.Uint64(b))
	var h map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Offsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(h[name], &e); err != nil {
		t.Fatalf("tensor %s: %v", name, err)
	}
	return 8 + n + e.Offsets[0], 8 + n + e.Offsets[1]
}

// unsampledChange returns the weights file's bytes b with 16 weights of an
// image-tower matrix negated where the weights' sampled hash does not read
// them (found by trying, the file at path rewritten at times from *clock):
// another model under the same hash, as a file damaged between the
// samples is.
func unsampledChange(t *testing.T, model string, b []byte, clock *time.Time) []byte {
	t.Helper()
	path := filepath.Join(model, "model.safetensors")
	hash := weightsHash(t, model)
	begin, end := tensorBytes(t, b, "vision_model.encoder.layers.0.mlp.fc1.weight")
	for off := begin + 1024; off+64 <= end-1024; off += 1000 {
		c := slices.Clone(b)
		for i := off + 3; i < off+64; i += 4 {
			c[i] ^= 0x80 // the sign of a little-endian float32
		}
		*clock = clock.Add(time.Minute)
		writeWeights(t, path, c, *clock)
		if weightsHash(t, model) == hash {
			return c
		}
	}
	t.Fatal("every run of 64 bytes of the matrix is sampled by the weights' hash")
	return nil
}

// TestPackCacheWeightsFileChangeRepacks checks that packed weights belong
// to the weights file as the filesystem sees it, not only to its sampled
// hash: a file damaged between the hash's samples packs, and once the
// pristine file is copied back (the same hash, a new modification time)
// the next start packs again, the panels of the pristine weights, rather
// than map the damaged ones for ever.
func TestPackCacheWeightsFileChangeRepacks(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		model, dir := t.TempDir(), t.TempDir()
		if err := hf.WriteRandom(model, packTestConfig, 1, "f32", 2); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(model, "model.safetensors")
		pristine, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		hash := weightsHash(t, model)
		clock := time.Now().Add(-time.Hour)
		damaged := unsampledChange(t, model, pristine, &clock)
		var images [][]float32 // each version's image embeddings
		for _, v := range []struct {
			name string
			b    []byte
		}{{"damaged", damaged}, {"copied back", pristine}} {
			clock = clock.Add(time.Minute)
			writeWeights(t, path, v.b, clock)
			if h := weightsHash(t, model); h != hash {
				t.Fatalf("%s: the weights' hash changed (%.12s, was %.12s): the change is sampled", v.name, h, hash)
			}
			mem := startModel(t, model, precision, "")
			run := startModel(t, model, precision, dir)
			if run.packed != allMatrices {
				t.Fatalf("%s weights: the start packed %d matrices, want %d (it took packed weights of another file)", v.name, run.packed, allMatrices)
			}
			sameOutputs(t, v.name, run.out, mem.out)
			if mapped := startModel(t, model, precision, dir); mapped.packed != 0 {
				t.Errorf("%s weights: the next start packed %d matrices, want 0 (mapped)", v.name, mapped.packed)
			} else {
				sameOutputs(t, v.name+", mapped", mapped.out, mem.out)
			}
			images = append(images, mem.out[0])
		}
		if slices.Equal(images[0], images[1]) {
			t.Error("the damaged and pristine weights embed the images alike: the test changes nothing")
		}
		// The damaged weights' files went when the pristine ones were
		// written (the same weights, another state of the file): one file
		// a group (once each stayed a month as one of the used last).
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		groups := map[string]int{}
		for _, e := range ents {
			if n := e.Name(); isPackName(n) {
				groups[n[:strings.LastIndexByte(n, '-')]]++
			}
		}
		for g, n := range groups {
			if n != 1 {
				t.Errorf("group %s holds %d packed files, want 1 (the older state's removed)", g, n)
			}
		}
		if len(groups) == 0 {
			t.Error("no packed files written")
		}
	})
}

// TestPackCacheKeepsOtherKeys checks that starts under two keys of the
// same model, tower and precision (two clipidx versions, two kernel
// layouts on a shared home) each keep their files: after the other has
// written its own, each maps its file and packs nothing.
func TestPackCacheKeepsOtherKeys(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		others := map[string]func() (undo func()){
			"version": func() func() {
				packVersion = PackVersion + "-other"
				return func() { packVersion = PackVersion }
			},
		}
		if precision == "f32" {
			others["kernel layout"] = func() func() {
				if err := gemm.SetKernel("go"); err != nil {
					t.Fatal(err)
				}
				return func() { gemm.SetKernel("") }
			}
		}
		for name, other := range others {
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				layout := gemm.PackLayout()
				startCached(t, 1, precision, dir)
				undo := other()
				if name == "kernel layout" && gemm.PackLayout() == layout {
					undo()
					t.Skip("the default kernel is the Go kernel: no other layout to switch to")
				}
				startCached(t, 1, precision, dir)
				undo()
				for round := range 2 {
					if run := startCached(t, 1, precision, dir); run.packed != 0 {
						t.Fatalf("round %d: a start packed %d matrices after one of another %s wrote its files, want 0", round, run.packed, name)
					}
					undo = other()
					run := startCached(t, 1, precision, dir)
					undo()
					if run.packed != 0 {
						t.Fatalf("round %d: a start of the other %s packed %d matrices, want 0", round, name, run.packed)
					}
				}
				if files := packFiles(t, dir); len(files) != 4 {
					t.Errorf("the folder holds %v, want two files per key", files)
				}
			})
		}
	})
}

// TestRemoveStaleUnusedAndCap checks the sweep after a write, with files
// last used (modified) at chosen times: any group's packed files unused
// for a month go (a renamed model's too), the written group keeps its
// packKeepGroup files used last, other groups keep theirs however many,
// temporary files left over an hour go, and nothing else is touched.
func TestRemoveStaleUnusedAndCap(t *testing.T) {
	const day = 24 * time.Hour
	files := []struct {
		name    string
		age     time.Duration
		removed bool
	}{
		{"m-image-f32-000000000000000a.pack", 0, false}, // the one written
		{"m-image-f32-000000000000000b.pack", time.Hour, false},
		{"m-image-f32-000000000000000c.pack", 2 * day, false},
		{"m-image-f32-000000000000000d.pack", 3 * day, true}, // the group's fourth
		{"m-image-f32-000000000000000e.pack", 40 * day, true},
		{"m-image-f32-from-f16-000000000000000f.pack", 5 * day, false}, // another group
		{"m-text-f32-0000000000000010.pack", 10 * day, false},
		{"m-text-f32-0000000000000011.pack", 11 * day, false},
		{"m-text-f32-0000000000000012.pack", 12 * day, false},
		{"m-text-f32-0000000000000013.pack", 13 * day, false},
		{"m-text-f32-0000000000000014.pack", 31 * day, true},
		{"renamed-image-f32-0000000000000015.pack", 29 * day, false},
		{"renamed-image-f32-0000000000000016.pack", 31 * day, true},
		{"m-image-f32-0000000000000017.pack.tmp123", 2 * time.Hour, true},
		{"m-text-f32-0000000000000018.pack.tmp9", 2 * time.Hour, true},
		{"m-image-f32-0000000000000019.pack.tmp5", time.Minute, false}, // being written
		{"notes.txt", 400 * day, false},
		{"old.pack", 400 * day, false},
	}
	dir := t.TempDir()
	now := time.Now()
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-f.age), now.Add(-f.age)); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(dir, "x-image-f32-000000000000001a.pack")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(sub, now.Add(-100*day), now.Add(-100*day)); err != nil {
		t.Fatal(err)
	}
	removeStale(dir, "m-image-f32", filepath.Join(dir, files[0].name))
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := os.IsNotExist(err); gone != f.removed {
			t.Errorf("%s, last used %v ago: removed %v, want %v", f.name, f.age, gone, f.removed)
		}
	}
	if _, err := os.Stat(sub); err != nil {
		t.Errorf("a folder named as a packed file: %v", err)
	}
}

// TestPackCacheMarksUse checks that a start mapping a packed file marks
// it used (its modification time, which removeStale goes by), and does so
// at most once a day.
func TestPackCacheMarksUse(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		dir := t.TempDir()
		startCached(t, 1, precision, dir)
		files := packFiles(t, dir)
		setAge := func(age time.Duration) time.Time {
			at := time.Now().Add(-age).Truncate(time.Second)
			for _, p := range files {
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
			}
			return at
		}
		modified := func(p string) time.Time {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			return st.ModTime()
		}
		setAge(40 * 24 * time.Hour)
		before := time.Now().Add(-time.Second)
		if run := startCached(t, 1, precision, dir); run.packed != 0 {
			t.Fatalf("packed %d matrices, want 0 (mapped)", run.packed)
		}
		for _, p := range files {
			if at := modified(p); at.Before(before) {
				t.Errorf("%s: a start mapped it and it still looks last used at %v", p, at)
			}
		}
		at := setAge(2 * time.Hour)
		startCached(t, 1, precision, dir)
		for _, p := range files {
			if got := modified(p); !got.Equal(at) {
				t.Errorf("%s, marked used 2 h ago: modified again at %v (want at most once a day)", p, got)
			}
		}
	})
}

// TestPackCacheUnwritableToldAtLoad checks that a start whose packed
// weights cannot be kept says so as soon as it is loaded, before any pass
// (a build records the note it has when it begins), and that a folder
// that can be written says nothing of the kind and is left with nothing
// by the check.
func TestPackCacheUnwritableToldAtLoad(t *testing.T) {
	withCachePrecision(t, func(t *testing.T, precision string) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		good := filepath.Join(t.TempDir(), "packed")
		for _, dir := range []string{filepath.Join(file, "packed"), good} {
			b, err := NewFast(hf.RandomModel(packTestConfig, 1, core.F32, core.BothTowers, 2), core.Options{Threads: 2, Precision: precision, PackCache: dir})
			if err != nil {
				t.Fatal(err)
			}
			note := b.Info().DeviceNote
			b.Close()
			if says := strings.Contains(note, "not saved"); says != (dir != good) {
				t.Errorf("cache folder %s: note at load %q", dir, note)
			}
		}
		if precision == "f32" {
			if ents, err := os.ReadDir(good); len(ents) != 0 || err != nil && !os.IsNotExist(err) {
				t.Errorf("the writable folder holds %v (%v) after a load that packed nothing, want nothing", ents, err)
			}
		}
	})
}
