package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The bbolt file format, as far as validateFile reads it (bbolt's
// internal/common page.go and meta.go). A page starts with a 16-byte
// header: id u64, flags u16, count u16, overflow u32. Pages 0 and 1 each
// hold a meta record after the header; the one with the higher txid that
// checks out is the current one. Integers are in the machine's byte order.
const (
	boltPageHeader  = 16
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltMetaSize    = 64 // magic … txid, then the checksum
	boltMetaSummed  = 56 // bytes covered by the FNV-64a checksum
	boltMinPageSize = 1024
	boltMaxPageSize = 64 << 10
)

// boltMeta is the part of a meta record validateFile uses.
type boltMeta struct {
	pageSize uint32
	root     uint64 // page of the root bucket
	freelist uint64 // page of the free list
	pgid     uint64 // high-water mark: pages [0, pgid) are in use or free
	txid     uint64
}

// parseMeta decodes the meta record at b (just after a page header) and
// reports whether its magic, version and checksum are right.
func parseMeta(b []byte) (boltMeta, bool) {
	if len(b) < boltMetaSize {
		return boltMeta{}, false
	}
	ne := binary.NativeEndian
	h := fnv.New64a()
	h.Write(b[:boltMetaSummed])
	if ne.Uint32(b[0:]) != boltMagic || ne.Uint32(b[4:]) != boltVersion || ne.Uint64(b[56:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize: ne.Uint32(b[8:]),
		root:     ne.Uint64(b[16:]),
		freelist: ne.Uint64(b[32:]),
		pgid:     ne.Uint64(b[40:]),
		txid:     ne.Uint64(b[48:]),
	}, true
}

// validateFile checks, with a few small reads, what bbolt trusts when it
// opens a file: a valid meta page, a file long enough to hold every page
// below the meta's high-water mark, and a free list of pages below it. bbolt reads the file through a
// memory map rounded up past its end, so a truncated file would otherwise
// fault (SIGBUS) on the first read of a missing page, which no recover can
// catch. An empty or missing file passes: bbolt creates it.
func validateFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	head := make([]byte, min(size, 2*boltMaxPageSize))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	m, err := currentMeta(head)
	if err != nil {
		return err
	}
	ps := uint64(m.pageSize)
	switch {
	case uint64(size) < 2*ps:
		return fmt.Errorf("%w: file is %d bytes, shorter than its two meta pages", ErrCorrupt, size)
	case m.pgid < 2 || m.pgid > uint64(size)/ps:
		return fmt.Errorf("%w: file is %d bytes but holds %d pages of %d bytes (truncated?)", ErrCorrupt, size, m.pgid, ps)
	case m.root < 2 || m.root >= m.pgid:
		return fmt.Errorf("%w: root page %d outside [2,%d)", ErrCorrupt, m.root, m.pgid)
	}
	// bbolt loads the free list when it opens a file for writing and
	// hands its pages out: ids of garbage there would be written at
	// garbage offsets.
	if _, _, err := freePages(f, m); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// currentMeta returns the meta record bbolt would use: of the two meta
// pages, the valid one with the higher transaction id. Like bbolt, it
// finds the page size in meta 0, or probes for meta 1 when meta 0 is bad.
func currentMeta(head []byte) (boltMeta, error) {
	m0, ok0 := parseMeta(head[min(len(head), boltPageHeader):])
	if ok0 && (m0.pageSize < boltMinPageSize || m0.pageSize > boltMaxPageSize || m0.pageSize&(m0.pageSize-1) != 0) {
		ok0 = false
	}
	ps := int(m0.pageSize)
	var m1 boltMeta
	ok1 := false
	for p := boltMinPageSize; p <= boltMaxPageSize && !ok1; p *= 2 {
		if ok0 && p != ps || p+boltPageHeader > len(head) {
			continue
		}
		if m, ok := parseMeta(head[p+boltPageHeader:]); ok && int(m.pageSize) == p {
			m1, ok1 = m, true
		}
	}
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		return m1, nil
	case ok0:
		return m0, nil
	}
	if notBolt(head) {
		return boltMeta{}, notIndex(fmt.Sprintf("not a bbolt file: it starts with %q", head[:min(len(head), 16)]))
	}
	return boltMeta{}, fmt.Errorf("%w: no valid meta page (both meta pages damaged)", ErrCorrupt)
}

// notIndex is ErrNotIndex saying why and what to do.
func notIndex(why string) error {
	return fmt.Errorf("%w (%s); clipidx neither writes to nor moves a file it did not make: give --db (or CLIPIDX_DB) the index's path", ErrNotIndex, why)
}

// boltMetaFlag is the flags of a meta page's header.
const boltMetaFlag = 0x04

// notBolt reports whether head is the start of a file bbolt never wrote:
// no meta magic where either meta page would hold it, and a first page
// header that is not meta page 0's. A file damaged from its first byte
// (zeroed, as some damage leaves it) still counts as a bbolt file, so
// --reindex can start it over.
func notBolt(head []byte) bool {
	ne := binary.NativeEndian
	for p := 0; p <= boltMaxPageSize; p = max(2*p, boltMinPageSize) {
		if off := p + boltPageHeader; off+4 <= len(head) && ne.Uint32(head[off:]) == boltMagic {
			return false
		}
	}
	hdr := head[:min(len(head), boltPageHeader)]
	if !bytes.ContainsFunc(hdr, func(r rune) bool { return r != 0 }) {
		return false // zeroed
	}
	// Meta page 0's header: id 0, the meta flag, no elements, no overflow
	// (of a file cut short, the bytes it kept).
	meta0 := make([]byte, boltPageHeader)
	ne.PutUint16(meta0[8:], boltMetaFlag)
	return !bytes.Equal(hdr, meta0[:len(hdr)])
}

// Page flags and element sizes of the bbolt format.
const (
	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltBucketLeaf   = 0x01 // leaf element flag: the value is a bucket
	boltElemSize     = 16   // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	boltNoFreelist   = ^uint64(0)
)

type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func parseHeader(b []byte) pageHeader {
	ne := binary.NativeEndian
	return pageHeader{ne.Uint64(b), ne.Uint16(b[8:]), ne.Uint16(b[10:]), ne.Uint32(b[12:])}
}

// readPage reads page id and its overflow pages, refusing pages at or past
// the high-water mark.
func readPage(f *os.File, m boltMeta, id uint64) (pageHeader, []byte, error) {
	ps := uint64(m.pageSize)
	if id < 2 || id >= m.pgid {
		return pageHeader{}, nil, fmt.Errorf("page %d: outside [2,%d)", id, m.pgid)
	}
	head := make([]byte, ps)
	if _, err := f.ReadAt(head, int64(id*ps)); err != nil {
		return pageHeader{}, nil, fmt.Errorf("page %d: %v", id, err)
	}
	h := parseHeader(head)
	if h.id != id {
		return h, nil, fmt.Errorf("page %d: header says page %d", id, h.id)
	}
	if uint64(h.overflow) >= m.pgid-id {
		return h, nil, fmt.Errorf("page %d: %d overflow pages run past the high-water mark %d", id, h.overflow, m.pgid)
	}
	if h.overflow == 0 {
		return h, head, nil
	}
	buf := make([]byte, (uint64(h.overflow)+1)*ps)
	if _, err := f.ReadAt(buf, int64(id*ps)); err != nil {
		return h, nil, fmt.Errorf("page %d: %v", id, err)
	}
	return h, buf, nil
}

// freePages reads the free list of meta m: page ids in [2, pgid), each
// once. It returns nil, nil when the file keeps no free list.
func freePages(f *os.File, m boltMeta) (pages []uint64, listPages []uint64, err error) {
	if m.freelist == boltNoFreelist {
		return nil, nil, nil
	}
	h, buf, err := readPage(f, m, m.freelist)
	if err != nil {
		return nil, nil, fmt.Errorf("free list: %w", err)
	}
	if h.flags != boltFreelistPage {
		return nil, nil, fmt.Errorf("free list: page %d has type %#x, not a free list", m.freelist, h.flags)
	}
	for i := uint64(0); i <= uint64(h.overflow); i++ {
		listPages = append(listPages, m.freelist+i)
	}
	body := buf[boltPageHeader:]
	n := uint64(h.count)
	if n == 0xFFFF { // the count did not fit: it is the first element
		n = binary.NativeEndian.Uint64(body)
		body = body[8:]
	}
	if n > uint64(len(body))/8 {
		return nil, nil, fmt.Errorf("free list: %d ids do not fit in %d bytes", n, len(body))
	}
	seen := make(map[uint64]bool, n)
	for i := uint64(0); i < n; i++ {
		id := binary.NativeEndian.Uint64(body[8*i:])
		if id < 2 || id >= m.pgid {
			return nil, nil, fmt.Errorf("free list: page %d outside [2,%d)", id, m.pgid)
		}
		if seen[id] {
			return nil, nil, fmt.Errorf("free list: page %d listed twice", id)
		}
		seen[id] = true
		pages = append(pages, id)
	}
	return pages, listPages, nil
}

// pageWalk checks the page structure of a bbolt file from its own bytes
// (read with pread, never through the memory map, so that no damage can
// fault): every bucket's tree of branch and leaf pages, element bounds and
// key order within each page, and that every page below the high-water
// mark is used exactly once or free, never both.
type pageWalk struct {
	f    *os.File
	m    boltMeta
	used []bool // by page id
	free map[uint64]bool
	errs []error
}

func (w *pageWalk) bad(err error) bool {
	if len(w.errs) < 20 {
		w.errs = append(w.errs, err)
	}
	return len(w.errs) >= 20
}

// checkPages runs pageWalk on the file at path and returns what it found,
// at most 20 problems.
func checkPages(path string) []error {
	f, err := os.Open(path)
	if err != nil {
		return []error{err}
	}
	defer f.Close()
	head := make([]byte, 2*boltMaxPageSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return []error{err}
	}
	m, err := currentMeta(head[:n])
	if err != nil {
		return []error{err}
	}
	if err := validateFile(f); err != nil {
		return []error{err}
	}
	w := &pageWalk{f: f, m: m, used: make([]bool, m.pgid), free: map[uint64]bool{}}
	w.used[0], w.used[1] = true, true
	free, list, err := freePages(f, m)
	if err != nil {
		return []error{err}
	}
	for _, id := range free {
		w.free[id] = true
	}
	for _, id := range list {
		w.use(id, "free list")
	}
	w.tree(m.root, "root bucket", 0)
	for id := uint64(2); id < m.pgid && len(w.errs) < 20; id++ {
		if !w.used[id] && !w.free[id] {
			w.bad(fmt.Errorf("page %d: neither used nor free", id))
		}
	}
	return w.errs
}

// use marks page id as used by what, reporting a page used twice or free.
func (w *pageWalk) use(id uint64, what string) bool {
	switch {
	case id >= w.m.pgid:
		return !w.bad(fmt.Errorf("%s: page %d past the high-water mark %d", what, id, w.m.pgid))
	case w.used[id]:
		return !w.bad(fmt.Errorf("%s: page %d used twice", what, id))
	case w.free[id]:
		return !w.bad(fmt.Errorf("%s: page %d is also free", what, id))
	}
	w.used[id] = true
	return true
}

// tree walks the pages of the bucket rooted at page id.
func (w *pageWalk) tree(id uint64, what string, depth int) {
	if depth > 64 {
		w.bad(fmt.Errorf("%s: tree deeper than 64 pages", what))
		return
	}
	h, buf, err := readPage(w.f, w.m, id)
	if err != nil {
		w.bad(fmt.Errorf("%s: %w", what, err))
		return
	}
	for i := uint64(0); i <= uint64(h.overflow); i++ {
		if !w.use(id+i, what) {
			return
		}
	}
	w.elements(h, buf, what, depth)
}

// elements checks the elements of a branch or leaf page held in buf
// (header first) and walks the pages and buckets they point at.
func (w *pageWalk) elements(h pageHeader, buf []byte, what string, depth int) {
	if h.flags != boltBranchPage && h.flags != boltLeafPage {
		w.bad(fmt.Errorf("%s: page %d has type %#x, want branch or leaf", what, h.id, h.flags))
		return
	}
	n := int(h.count)
	if boltPageHeader+n*boltElemSize > len(buf) {
		w.bad(fmt.Errorf("%s: page %d: %d elements do not fit", what, h.id, n))
		return
	}
	ne := binary.NativeEndian
	var prev []byte
	for i := 0; i < n; i++ {
		e := boltPageHeader + i*boltElemSize
		el := buf[e : e+boltElemSize]
		var pos, ksize, vsize uint64
		if h.flags == boltBranchPage {
			pos, ksize = uint64(ne.Uint32(el)), uint64(ne.Uint32(el[4:]))
		} else {
			pos, ksize, vsize = uint64(ne.Uint32(el[4:])), uint64(ne.Uint32(el[8:])), uint64(ne.Uint32(el[12:]))
		}
		if uint64(e)+pos+ksize+vsize > uint64(len(buf)) {
			w.bad(fmt.Errorf("%s: page %d element %d runs past the page", what, h.id, i))
			return
		}
		k := buf[uint64(e)+pos : uint64(e)+pos+ksize]
		if i > 0 && bytes.Compare(prev, k) >= 0 {
			w.bad(fmt.Errorf("%s: page %d: keys out of order at element %d", what, h.id, i))
			return
		}
		prev = k
		if h.flags == boltBranchPage {
			w.tree(ne.Uint64(el[8:]), what, depth+1)
			continue
		}
		if ne.Uint32(el)&boltBucketLeaf == 0 {
			continue
		}
		v := buf[uint64(e)+pos+ksize : uint64(e)+pos+ksize+vsize]
		name := fmt.Sprintf("bucket %q", k)
		if len(v) < 16 {
			w.bad(fmt.Errorf("%s: header of %d bytes", name, len(v)))
			continue
		}
		if root := ne.Uint64(v); root != 0 {
			w.tree(root, name, depth+1)
		} else if len(v) < 16+boltPageHeader {
			w.bad(fmt.Errorf("%s: inline page of %d bytes", name, len(v)-16))
		} else {
			inline := v[16:]
			w.elements(parseHeader(inline), inline, name, depth+1)
		}
	}
}
