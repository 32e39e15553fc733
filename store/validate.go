package store

import (
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
// opens a file: a valid meta page, and a file long enough to hold every
// page below the meta's high-water mark. bbolt reads the file through a
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
	return boltMeta{}, fmt.Errorf("%w: no valid meta page (not a bbolt file, or both meta pages damaged)", ErrCorrupt)
}
