package cpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// The packed-weights file: one tower's matrices packed for one precision
// and kernel layout, written once and memory-mapped read-only at later
// starts (packcache.go decides what goes in and when). Little is trusted:
// a file is used only when its header has the magic, this format version,
// exactly the key the caller expects, the matrix shapes and sizes the
// caller expects, data that lies inside the file, a header checksum that
// matches, and a checksum of each matrix's bytes sampled across the whole
// matrix that matches. Anything else is ignored (and rebuilt by the caller).
//
// The data checksum samples rather than sums every byte: a CRC-32C of the
// whole of ViT-H/14's packed image tower (2.5 GB in float32) would take
// 0.7 to 1.7 s at the 1.5–3.5 GB/s hash/crc32 measured on the Zen 5
// development machine (2026-12-02, a loaded machine), more than a one-shot
// search's whole budget, while one page in packSampleStride,
// plus each matrix's last, costs a few milliseconds. It catches damage to
// any run of packSampleStride pages or more (extents zeroed by a crash,
// a file partly overwritten or cut short and padded again), not a lone
// flipped bit between the sampled pages: the file is a cache of work that
// is written atomically and synced, not a store of record.
//
//	offset 0   magic "CLXPACK\x00"
//	           u32 format version (packFormat)
//	           u32 key length, key bytes (packcache.go: what the panels depend on)
//	           u32 matrices, then per matrix: u32 rows, u32 cols, u64 offset, u64 size,
//	             u32 CRC-32C of its sampled pages (sampleSum)
//	           u32 CRC-32C of every header byte before it
//	           zeros up to the first matrix
//	offset o   each matrix's packed bytes, at a multiple of packAlign
//
// Integers are little-endian; the packed bytes are in the machine's order
// (the key names the architecture).
const (
	packMagic  = "CLXPACK\x00"
	packFormat = 2
	packAlign  = 4096 // page-aligned panels: the kernels' aligned loads, whole pages per matrix
	packExt    = ".pack"
	// packSampleStride: sampleSum reads one page of packAlign bytes in
	// this many (1/64 of the data, a 256 KiB stride).
	packSampleStride = 64
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// packShape is one matrix of a packed file: its shape and packed size.
type packShape struct{ rows, cols, size int }

// packHeader encodes the header for key, shapes and the matrices' sampled
// checksums (sums; zeros to lay it out before they are known), where
// each matrix's bytes start, and where in the header each checksum is;
// total is the file's size.
func packHeader(key string, shapes []packShape, sums []uint32) (hdr []byte, offs []int64, sumAt []int, total int64) {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString(packMagic)
	b.Write(le.AppendUint32(nil, packFormat))
	b.Write(le.AppendUint32(nil, uint32(len(key))))
	b.WriteString(key)
	b.Write(le.AppendUint32(nil, uint32(len(shapes))))
	end := int64(b.Len() + len(shapes)*28 + 4)
	off := alignUp(end)
	offs = make([]int64, len(shapes))
	sumAt = make([]int, len(shapes))
	for i, s := range shapes {
		offs[i] = off
		b.Write(le.AppendUint32(nil, uint32(s.rows)))
		b.Write(le.AppendUint32(nil, uint32(s.cols)))
		b.Write(le.AppendUint64(nil, uint64(off)))
		b.Write(le.AppendUint64(nil, uint64(s.size)))
		sumAt[i] = b.Len()
		var sum uint32
		if sums != nil {
			sum = sums[i]
		}
		b.Write(le.AppendUint32(nil, sum))
		off = alignUp(off + int64(s.size))
	}
	b.Write(le.AppendUint32(nil, crc32.Checksum(b.Bytes(), crc32c)))
	return b.Bytes(), offs, sumAt, off
}

// sampleSum is the CRC-32C of pages 0, packSampleStride,
// 2·packSampleStride, … of b (packAlign bytes each, b's start being
// page-aligned in the file) and of b's last page.
func sampleSum(b []byte) uint32 {
	var sum uint32
	const step = packSampleStride * packAlign
	for o := 0; o < len(b); o += step {
		sum = crc32.Update(sum, crc32c, b[o:min(o+packAlign, len(b))])
	}
	if last := (len(b) - 1) / packAlign * packAlign; len(b) > 0 && last%step != 0 {
		sum = crc32.Update(sum, crc32c, b[last:])
	}
	return sum
}

func alignUp(n int64) int64 { return (n + packAlign - 1) / packAlign * packAlign }

// writePackFile writes the matrices data(0), …, data(len(shapes)-1) to
// path under key, atomically: a temporary file in the same folder, synced,
// then renamed over path, so a reader sees the whole file or none.
func writePackFile(path, key string, shapes []packShape, data func(i int) []byte) (err error) {
	_, offs, _, total := packHeader(key, shapes, nil)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sums := make([]uint32, len(shapes))
	for i, s := range shapes {
		b := data(i)
		if len(b) != s.size {
			return fmt.Errorf("write %s: matrix %d has %d bytes, want %d", path, i, len(b), s.size)
		}
		if _, err = tmp.WriteAt(b, offs[i]); err != nil {
			return err
		}
		sums[i] = sampleSum(b)
	}
	hdr, _, _, _ := packHeader(key, shapes, sums)
	if _, err = tmp.WriteAt(hdr, 0); err != nil {
		return err
	}
	if err = tmp.Truncate(total); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// syncDir makes a rename in dir durable where the system allows it (an
// error only risks losing the file, which is rebuilt then).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// errPackFile is wrapped by openPackFile's errors about the file's
// contents (as against failing to open it).
var errPackFile = errors.New("not a usable packed-weights file")

// openPackFile maps path read-only and returns the mapping and each
// matrix's bytes inside it, when its header matches key and shapes (see
// the format above); otherwise an error, and nothing stays mapped.
func openPackFile(path, key string, shapes []packShape) (*core.Mapping, [][]byte, error) {
	mp, err := core.MapFile(path)
	if err != nil {
		return nil, nil, err
	}
	parts, err := packParts(mp.Data, key, shapes)
	if err != nil {
		mp.Close()
		return nil, nil, fmt.Errorf("%s: %w: %v", path, errPackFile, err)
	}
	return mp, parts, nil
}

// packParts checks data's header against key and shapes, and each
// matrix's sampled checksum, and returns each matrix's bytes.
func packParts(data []byte, key string, shapes []packShape) ([][]byte, error) {
	hdr, offs, sumAt, total := packHeader(key, shapes, nil)
	if len(data) >= len(hdr) {
		// The checksums are the file's own: the header must match but for
		// them, and they must match the data.
		sums := make([]uint32, len(shapes))
		for i, at := range sumAt {
			sums[i] = binary.LittleEndian.Uint32(data[at:])
		}
		hdr, _, _, _ = packHeader(key, shapes, sums)
	}
	switch {
	case len(data) < len(hdr):
		return nil, fmt.Errorf("%d bytes, shorter than its header (%d)", len(data), len(hdr))
	case string(data[:len(packMagic)]) != packMagic:
		return nil, errors.New("bad magic")
	case !bytes.Equal(data[:len(hdr)-4], hdr[:len(hdr)-4]):
		return nil, errors.New("header for another key, version or shapes")
	case !bytes.Equal(data[len(hdr)-4:len(hdr)], hdr[len(hdr)-4:]):
		return nil, errors.New("header checksum mismatch")
	case int64(len(data)) != total:
		return nil, fmt.Errorf("%d bytes, want %d (truncated?)", len(data), total)
	}
	parts := make([][]byte, len(shapes))
	for i, s := range shapes {
		parts[i] = data[offs[i] : offs[i]+int64(s.size) : offs[i]+int64(s.size)]
		if sampleSum(parts[i]) != binary.LittleEndian.Uint32(data[sumAt[i]:]) {
			return nil, fmt.Errorf("matrix %d: checksum of its sampled pages mismatch (damaged data)", i)
		}
	}
	return parts, nil
}

// How long packed files stay. A file of another key than this start's is
// no stale copy: another clipidx version, another kernel layout or another
// machine sharing the home folder may use it, and removing it would have
// them rebuild it at each start, in turn. So files go for want of use: a
// start that maps one marks it used (touchPackFile), and each write sweeps
// the folder of the files unused for packUnusedFor, whatever their model
// (that of a renamed model folder, or of replaced weights, is never used
// again), and keeps packKeepGroup files of a model, tower and precision,
// those used last (each holds the tower's weights: 2.5 GB for
// ViT-H/14's image tower in float32).
const (
	packTouchEvery = 24 * time.Hour      // at most one write to mark a file used
	packUnusedFor  = 30 * 24 * time.Hour // unused this long: removed
	packKeepGroup  = 3                   // files kept per model, tower and precision
	packTmpAge     = time.Hour           // a temporary file this old was left by a writer that did not finish
)

// touchPackFile marks the packed file at path used now, for removeStale:
// its modification time, moved at most once in packTouchEvery. A failure
// (a folder of another user's) only makes it look unused sooner.
func touchPackFile(path string) {
	st, err := os.Stat(path)
	if err != nil || time.Since(st.ModTime()) < packTouchEvery {
		return
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// removeStale sweeps dir once keep, a file of group (the same model, tower
// and precision), has been written: it removes the packed files of any
// group unused (not modified) for packUnusedFor, the group's files but
// keep and the packKeepGroup-1 used last, and temporary files older than
// packTmpAge. Other files are left alone; a file mapped by a running start
// stays readable to it once removed.
//
// A file of the group whose key differs from keep's only in the weights
// file's stat (or has none: written by a clipidx before it was keyed)
// was packed from an earlier state of the same weights: it is removed at
// once, not kept as one of the group's used last (once every upgrade, and
// every model pull or touch, left 2.5 GB files for a month).
func removeStale(dir, group, keep string) {
	keepKey, _ := packFileKey(keep)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type packUse struct {
		name string
		used time.Time
	}
	var mine []packUse
	now := time.Now()
	for _, e := range ents {
		name := e.Name()
		st, err := e.Info()
		if err != nil || !st.Mode().IsRegular() || name == filepath.Base(keep) {
			continue
		}
		age := now.Sub(st.ModTime())
		switch {
		case isPackName(name) && age > packUnusedFor:
			os.Remove(filepath.Join(dir, name))
		case isPackName(name) && inPackGroup(name, group):
			if k, ok := packFileKey(filepath.Join(dir, name)); ok && keepKey != "" && withoutFileStat(k) == withoutFileStat(keepKey) {
				os.Remove(filepath.Join(dir, name))
				continue
			}
			mine = append(mine, packUse{name, st.ModTime()})
		case isPackTemp(name) && age > packTmpAge:
			os.Remove(filepath.Join(dir, name))
		}
	}
	slices.SortFunc(mine, func(a, b packUse) int { return b.used.Compare(a.used) })
	for _, u := range mine[min(len(mine), packKeepGroup-1):] {
		os.Remove(filepath.Join(dir, u.name))
	}
}

// packFileKey reads the key in the header of the packed file at path.
func packFileKey(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, len(packMagic)+8)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:len(packMagic)]) != packMagic {
		return "", false
	}
	n := binary.LittleEndian.Uint32(head[len(packMagic)+4:])
	if n > 1<<16 {
		return "", false
	}
	key := make([]byte, n)
	if _, err := io.ReadFull(f, key); err != nil {
		return "", false
	}
	return string(key), true
}

// fileStatPart is the part of a key naming the weights file's stat.
var fileStatPart = regexp.MustCompile(`\|file [^|]*`)

// withoutFileStat is key without the weights file's stat.
func withoutFileStat(key string) string { return fileStatPart.ReplaceAllString(key, "") }

// isPackName reports whether name is a packed file's (packPath: a group,
// "-", the key's hash, packExt).
func isPackName(name string) bool {
	base, ok := strings.CutSuffix(name, packExt)
	i := strings.LastIndexByte(base, '-')
	return ok && i > 0 && isKeyHash(base[i+1:])
}

// isPackTemp reports whether name is a temporary file of writePackFile.
func isPackTemp(name string) bool {
	i := strings.Index(name, packExt+".tmp")
	return i > 0 && isPackName(name[:i+len(packExt)])
}

// inPackGroup reports whether name, a packed file's, is of group.
func inPackGroup(name, group string) bool {
	rest, ok := strings.CutPrefix(name, group+"-")
	return ok && isKeyHash(strings.TrimSuffix(rest, packExt))
}

// isKeyHash reports whether s is the key part of a packed file's name (16
// hex digits), so that a group's files are told from those of a group
// whose name it begins (m-text-bf16 and m-text-bf16-from-f16).
func isKeyHash(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
