package cpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/internal/gemm"
)

// Packed weights kept on disk (core.Options.PackCache). Packing is paid
// once: the first start that packs a tower's weights (bf16 at load; float32
// at the tower's first pass, where the kernel gains by packing) writes them
// to a file of the cache folder, and later starts map that file read-only
// and use the panels in place, with no packing and no copy into the heap.
//
// A file holds one tower, one precision and one kernel layout, under a key
// naming all that the panels depend on: PackVersion, the weights' hash,
// the weights file as the filesystem sees it (core.Model.Source: size,
// modification time, inode; the hash only samples the file, so a file
// damaged and copied back keeps its hash but not its modification time)
// and how the weights are held (dtype, rounded at load), the tower, the
// precision, the kernel's panel layout (gemm.BF16Layout, gemm.PackLayout)
// and the architecture. Any change gives another key, so another file name
// and a rebuild. A file whose header does not match its key exactly is
// never used (packfile.go).
//
// Files of other keys are not removed for that: another clipidx version,
// another kernel layout or another machine sharing the home folder uses
// them. Each start that maps a file marks it used (touchPackFile), and a
// write sweeps the folder of files unused for a month and keeps a few per
// model, tower and precision (removeStale).

// PackVersion is clipidx's version of its packed weights, part of every
// key: raise it whenever packing changes in a way the layout names do not
// show, and every start rebuilds its files.
const PackVersion = "clipidx-pack 1"

// packVersion is PackVersion, a variable for the tests.
var packVersion = PackVersion

// packCount counts the matrices packed in memory (bf16 or float32), for
// the tests: a start that maps its packed weights packs none.
var packCount atomic.Int64

// packCache is the fast path's folder of packed weights and what it has
// mapped from it (unmapped at Close, after the last product).
type packCache struct {
	dir  string
	maps []*core.Mapping
	note atomic.Pointer[string] // what happened, for Info.DeviceNote (asked during passes)
}

func (c *packCache) setNote(s string) { c.note.Store(&s) }

func (c *packCache) close() {
	for _, mp := range c.maps {
		mp.Close()
	}
	c.maps = nil
}

// towers returns the towers loaded.
func (f *fastCPU) towers() []*fastTower {
	var ts []*fastTower
	for _, t := range []*fastTower{f.vis, f.txt} {
		if t != nil {
			ts = append(ts, t)
		}
	}
	return ts
}

// towerLins returns tower t's weight matrices in a fixed order: the
// layers' q, k, v, o, fc1, fc2, then the projection, then (image tower)
// the patch embedding.
func (f *fastCPU) towerLins(t *fastTower) []*lin {
	var ws []*lin
	for _, g := range f.towerGroups(t) {
		ws = append(ws, g...)
	}
	return ws
}

// towerGroups is towerLins cut into the groups packed side by side in
// memory: each layer's q, k and v (one product, stackQKV), then every
// other matrix alone.
func (f *fastCPU) towerGroups(t *fastTower) [][]*lin {
	var gs [][]*lin
	for i := range t.layers {
		l := &t.layers[i]
		gs = append(gs, []*lin{&l.q, &l.k, &l.v}, []*lin{&l.o}, []*lin{&l.fc1}, []*lin{&l.fc2})
	}
	gs = append(gs, []*lin{&t.proj})
	if t == f.vis {
		gs = append(gs, []*lin{&f.patch})
	}
	return gs
}

func (f *fastCPU) towerName(t *fastTower) string {
	if t == f.vis {
		return "image"
	}
	return "text"
}

// packKey is what tower t's panels in precision and layout depend on.
func (f *fastCPU) packKey(t *fastTower, precision, layout string) string {
	order := "le"
	if !core.LittleEndian {
		order = "be"
	}
	return fmt.Sprintf("%s|weights %s|file %s|held %s rounded=%v|tower %s|precision %s|layout %s|arch %s-%s",
		packVersion, f.m.Hash, f.m.Source, f.m.Dtype, f.m.Rounded, f.towerName(t), precision, layout, runtime.GOARCH, order)
}

// packPath is the file of key for tower t in precision, and its group
// (the prefix shared by the files of the same model, tower, precision and
// rounding at load, of which removeStale keeps a few).
func (f *fastCPU) packPath(t *fastTower, precision, key string) (path, group string) {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, f.m.Cfg.Name)
	if name == "" {
		name = "model"
	}
	sum := sha256.Sum256([]byte(key))
	group = name + "-" + f.towerName(t) + "-" + precision
	if f.m.Rounded { // --weights f16 and as stored keep a file each
		group += "-from-" + f.m.Dtype.String()
	}
	return filepath.Join(f.cache.dir, group+"-"+hex.EncodeToString(sum[:8])+packExt), group
}

// usable reports whether packed weights may be kept in the cache: a
// folder is set, the weights have a hash to key them by, and files are
// mapped (where the system reads them into memory, a file would be a
// second copy of the weights).
func (c *packCache) usable(m *core.Model) bool {
	return c.dir != "" && m.Hash != "" && core.CanMap
}

// shapes lists the packed sizes of ws, size(w) bytes each.
func shapes(ws []*lin, size func(w *lin) int) []packShape {
	s := make([]packShape, len(ws))
	for i, w := range ws {
		s[i] = packShape{w.m.Rows, w.m.Cols, size(w)}
	}
	return s
}

// mapPacked maps tower t's file for precision and layout and returns each
// matrix's bytes, or nil when there is no usable file (absent, for another
// key, damaged): the caller packs then.
func (f *fastCPU) mapPacked(t *fastTower, precision, layout string, sh []packShape) ([][]byte, *core.Mapping) {
	key := f.packKey(t, precision, layout)
	path, _ := f.packPath(t, precision, key)
	mp, parts, err := openPackFile(path, key, sh)
	if err != nil {
		return nil, nil
	}
	touchPackFile(path)
	// Every pass reads all of it: map it in at once rather than by faults.
	mp.Populate()
	return parts, mp
}

// notSaved is the note of packed weights that could not be kept.
func notSaved(err error) string { return fmt.Sprintf("packed weights not saved: %v", err) }

// probe tries to make the folder and a file in it for path before a tower
// packs for it at its first pass, so that a folder that cannot be written
// is told at load (Info.DeviceNote), where a build takes the note it
// records, and not only once a pass has packed.
func (c *packCache) probe(path string) {
	err := os.MkdirAll(c.dir, 0o755)
	if err == nil {
		var tmp *os.File
		// Named as writePackFile's temporary files, which removeStale
		// sweeps should this one stay.
		if tmp, err = os.CreateTemp(c.dir, filepath.Base(path)+".tmp*"); err == nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		c.setNote(notSaved(err))
	}
}

// savePacked writes tower t's packed matrices (data(i) for the i-th of sh)
// to its file, and sweeps the folder (removeStale). A failure only costs
// the packing at the next start; Info says why.
func (f *fastCPU) savePacked(t *fastTower, precision, layout string, sh []packShape, data func(i int) []byte) {
	key := f.packKey(t, precision, layout)
	path, group := f.packPath(t, precision, key)
	err := os.MkdirAll(f.cache.dir, 0o755)
	if err == nil {
		err = writePackFile(path, key, sh, data)
	}
	if err != nil {
		f.cache.setNote(notSaved(err))
		return
	}
	removeStale(f.cache.dir, group, path)
	f.cache.setNote("packed weights saved to " + f.cache.dir)
}

// mapBF16 makes tower t's matrices ws use their bf16 panels from the
// cache, and reports whether it did (else nothing changed).
func (f *fastCPU) mapBF16(t *fastTower, ws []*lin) bool {
	if !f.cache.usable(f.m) {
		return false
	}
	parts, mp := f.mapPacked(t, "bf16", gemm.BF16Layout, bf16Shapes(ws))
	if parts == nil {
		return false
	}
	ps := make([]*gemm.PackedBF16, len(ws))
	for i, w := range ws {
		p, err := gemm.PackedBF16From(w.m.Rows, w.m.Cols, parts[i])
		if err != nil {
			mp.Close()
			return false
		}
		ps[i] = p
	}
	for i, w := range ws {
		w.src.F32, w.src.U16 = nil, nil
		w.bf, w.m = ps[i], gemm.Matrix{Rows: w.m.Rows, Cols: w.m.Cols}
	}
	f.cache.maps = append(f.cache.maps, mp)
	f.cache.setNote("packed weights mapped from " + f.cache.dir)
	return true
}

// saveBF16 writes tower t's bf16 panels, just packed, to the cache.
func (f *fastCPU) saveBF16(t *fastTower, ws []*lin) {
	if !f.cache.usable(f.m) {
		return
	}
	f.savePacked(t, "bf16", gemm.BF16Layout, bf16Shapes(ws), func(i int) []byte { return ws[i].bf.Bytes() })
}

func bf16Shapes(ws []*lin) []packShape {
	return shapes(ws, func(w *lin) int { return gemm.BF16Bytes(w.m.Rows, w.m.Cols) })
}

func f32Shapes(ws []*lin) []packShape {
	return shapes(ws, func(w *lin) int { return gemm.PackedF32Bytes(w.m.Rows, w.m.Cols) })
}

// cachesF32 reports whether tower t's float32 panels are kept in the
// cache: the kernel gains by packing and every matrix is float32 as held
// (warmF32 packs no other).
func (f *fastCPU) cachesF32(t *fastTower) bool {
	if f.precision != "f32" || packOff || !packPays() || !f.cache.usable(f.m) {
		return false
	}
	for _, w := range f.towerLins(t) {
		if w.m.Dtype != gemm.F32 {
			return false
		}
	}
	return true
}

// mapF32 makes tower t's matrices use their float32 panels from the
// cache, and reports whether it did (else nothing changed).
func (f *fastCPU) mapF32(t *fastTower) bool {
	if !f.cachesF32(t) {
		return false
	}
	ws := f.towerLins(t)
	parts, mp := f.mapPacked(t, "f32", gemm.PackLayout(), f32Shapes(ws))
	if parts == nil {
		path, _ := f.packPath(t, "f32", f.packKey(t, "f32", gemm.PackLayout()))
		f.cache.probe(path)
		return false
	}
	ms := make([]gemm.Matrix, len(ws))
	for i, w := range ws {
		ms[i] = gemm.Matrix{Rows: w.m.Rows, Cols: w.m.Cols, Dtype: gemm.F32}
		if err := ms[i].UsePacked(parts[i]); err != nil {
			mp.Close()
			return false
		}
	}
	var n int64
	for i, w := range ws {
		w.src.F32 = nil
		w.m = ms[i]
		n += int64(w.m.Rows) * int64(w.m.Cols) * 4
	}
	f.packedN.Add(int64(len(ws)))
	f.packedBytes.Add(n)
	f.cache.maps = append(f.cache.maps, mp)
	f.cache.setNote("packed weights mapped from " + f.cache.dir)
	return true
}

// saveF32 writes tower t's float32 panels to the cache once every matrix
// is packed for the current kernel, and reports whether that was the case.
func (f *fastCPU) saveF32(t *fastTower) bool {
	ws := f.towerLins(t)
	layout := gemm.PackLayout()
	parts := make([][]byte, len(ws))
	for i, w := range ws {
		b, l := w.m.PackedBytes()
		if l != layout {
			return false
		}
		parts[i] = b
	}
	f.savePacked(t, "f32", layout, f32Shapes(ws), func(i int) []byte { return parts[i] })
	return true
}
