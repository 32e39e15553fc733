package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bbolt never gives a file's free pages back to the file system: forget,
// a rebuild of changed photos and merge leave pages that later commits
// reuse but the file keeps. Compact writes the index's buckets into a
// fresh file beside it, packed, and renames that over the index.

// ErrNoSpace is returned when the index's folder has not the free space
// Compact needs for the new file (the index's live data and a margin).
var ErrNoSpace = errors.New("not enough free space")

// CompactOptions configures Compact; the zero value works.
type CompactOptions struct {
	// Timeout bounds the wait for the index's shared lock (a commit in
	// another process); 0 = DefaultTimeout.
	Timeout time.Duration
	// OnLeftover, when set, hears of each copy of the index that a merge
	// or compaction killed part-way left beside it (see Leftover), once
	// it is removed or could not be.
	OnLeftover func(Leftover)
	// Command names the compaction in the lock file while it runs (what a
	// build that waits for it says: "clipidx compact").
	Command string
}

// CompactSummary says what Compact did.
type CompactSummary struct {
	Path   string `json:"path"`         // the index, as given
	Before int64  `json:"before_bytes"` // its size before
	After  int64  `json:"after_bytes"`  // and after
}

// compactTxBytes is how many bytes of keys and values Compact writes into
// the new file per transaction: bbolt holds a transaction's pages in
// memory until it commits.
const compactTxBytes = 64 << 20

// Compact rewrites the index at path into a new file beside it, with
// every bucket, key, value and bucket sequence as they were and no free
// pages, and renames it over path: the space forget, changed files and
// merges freed goes back to the file system. The new file keeps the
// index's mode and its transaction id, so that what is stamped with it
// (the metadata column, the Live Photo links) stays current.
//
// It holds the build lock throughout (ErrBuildRunning when a build,
// merge, forget or watch holds it), and removes first the copies of the
// index that merges or compactions killed part-way left (telling
// opts.OnLeftover). Readers go on meanwhile: one that opened the index
// before the rename reads the old file to its end, later ones the new.
// A symbolic link named path is followed (the file it leads to is
// replaced); another hard link keeps the old file.
//
// It refuses, changing nothing, a missing or empty index (ErrNoIndex), a
// file that is no index of this schema (ErrNotIndex, ErrSchema), a
// damaged one (ErrCorrupt: Snapshot.Check runs first), and a
// folder without the free space the new file may take (ErrNoSpace: the
// space is set aside before the copy). Stopped by ctx (looked at during
// the copy and last before the rename), or failing, it removes the new
// file and leaves path as it was; a process killed outright leaves it,
// and the next compaction or merge removes it.
func Compact(ctx context.Context, path string, opts CompactOptions) (sum CompactSummary, err error) {
	sum.Path = path
	target, err := resolveLink(path)
	if err != nil {
		return sum, err
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sum, fmt.Errorf("%s: %w", path, ErrNoIndex)
	case err != nil:
		return sum, err
	case !fi.Mode().IsRegular():
		return sum, fmt.Errorf("%s: %w", path, notIndex("not a regular file"))
	case fi.Size() == 0:
		return sum, fmt.Errorf("%s is empty (0 bytes): %w", path, ErrNoIndex)
	}
	// A file that is no index is refused before its folder gets a lock
	// file: as a reader does, which needs no lock.
	r, err := openReader(target, ReaderOptions{Timeout: opts.Timeout})
	if err != nil {
		return sum, naming(path, err)
	}
	r.Close()
	release, err := lockReplaced(path, target, opts.Command, opts.OnLeftover)
	if err != nil {
		return sum, err
	}
	defer release()
	// The size again, now that no writer can change it.
	if fi, err = os.Stat(target); err != nil {
		return sum, err
	}
	if err := ctx.Err(); err != nil { // stopped while waiting for the lock
		return sum, err
	}
	sum.Before = fi.Size()

	src, err := openBolt(target, true, opts.Timeout)
	if err != nil {
		return sum, naming(path, err)
	}
	defer closeDB(src)
	var txid uint64
	var damage error
	if err := guard(func() error {
		return src.View(func(tx *bolt.Tx) error {
			txid = uint64(tx.ID())
			id, err := readMeta(tx)
			if err != nil {
				return err
			}
			// bbolt copies what its pages say: a damaged tree would be
			// copied as it reads, the evidence lost with the old file.
			damage = (&Snapshot{tx: tx, id: id}).Check(true)
			return nil
		})
	}); err != nil {
		return sum, naming(path, err)
	}
	if damage != nil {
		return sum, fmt.Errorf("%s: %w; nothing was changed (clipidx status --check lists the damage):\n%v", path, ErrCorrupt, damage)
	}
	if err := ctx.Err(); err != nil { // stopped during the check
		return sum, err
	}
	live, pageSize, err := liveBytes(target)
	if err != nil {
		return sum, naming(path, err)
	}

	tmp, err := createCompact(ctx, target, fi.Mode().Perm(), live+live/10+compactSlack)
	if err != nil {
		return sum, fmt.Errorf("compact %s: %w", path, err)
	}
	defer func() {
		if err == nil {
			return
		}
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr) // an *fs.PathError naming the new file
		}
	}()
	if err := copyInto(ctx, src, tmp, fi.Mode().Perm(), pageSize); err != nil {
		if ctx.Err() != nil {
			return sum, ctx.Err()
		}
		return sum, fmt.Errorf("compact %s into %s: %w", path, tmp, err)
	}
	if err := setTxid(tmp, txid); err != nil {
		return sum, fmt.Errorf("compact %s into %s: %w", path, tmp, err)
	}
	if err := verifyCompact(tmp, txid); err != nil {
		return sum, fmt.Errorf("compact %s: the new file %s does not read back: %w", path, tmp, err)
	}
	if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
		return sum, err
	}
	keepOwner(tmp, fi)
	nfi, err := os.Stat(tmp)
	if err != nil {
		return sum, err
	}
	sum.After = nfi.Size()
	closeDB(src) // its shared lock is on the old file: let it go before the rename
	if err := renameOver(ctx, tmp, target, false); err != nil {
		return sum, err
	}
	return sum, nil
}

// naming is err, said of the index path unless it names it (or the file
// a link named path leads to) already.
func naming(path string, err error) error {
	if target, lerr := resolveLink(path); strings.Contains(err.Error(), path) || lerr == nil && strings.Contains(err.Error(), target) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// compactSlack is the part of Compact's margin that does not grow with
// the index: the pages a transaction leaves free in the new file, and
// room for the file system's own blocks.
const compactSlack = 4 << 20

// liveBytes returns the bytes of the bbolt file at path that hold data
// (its pages up to the high-water mark, less the free ones) and its page
// size, from its meta and free list only.
func liveBytes(path string) (live int64, pageSize int, err error) {
	m, free, err := freeList(path)
	if err != nil {
		return 0, 0, err
	}
	return int64(m.pgid-uint64(len(free))) * int64(m.pageSize), int(m.pageSize), nil
}

// freeList reads the current meta and the free pages of the bbolt file at
// path, with pread.
func freeList(path string) (boltMeta, []uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return boltMeta{}, nil, err
	}
	defer f.Close()
	head := make([]byte, 2*boltMaxPageSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return boltMeta{}, nil, err
	}
	m, err := currentMeta(head[:n])
	if err != nil {
		return boltMeta{}, nil, err
	}
	free, _, err := freePages(f, m)
	if err != nil {
		return boltMeta{}, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return m, free, nil
}

// createCompact creates the new file beside target (named as a merge's
// copy, so that removeLeftovers knows it) with mode, and sets aside need
// bytes in it (allocated where the file system can, else written), then
// empties it: a folder without the space is refused (ErrNoSpace) before
// any of the copy is written, quotas included, where a look at the file
// system's free blocks would miss them. It returns the file's name; the
// file is removed on any failure.
func createCompact(ctx context.Context, target string, mode fs.FileMode, need int64) (_ string, err error) {
	f, err := createBeside(target, mode)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	// Writable until the copy is done (an index of mode 0444 is copied
	// into a file bbolt must open for writing); Compact then gives it the
	// index's mode, which the umask may also have cut.
	if err := f.Chmod(mode | 0o200); err != nil {
		return "", err
	}
	aside := func(off int64, err error) error {
		if !noSpace(err) {
			return fmt.Errorf("set aside %s for the new index in %s: %w", megabytes(need), filepath.Dir(target), err)
		}
		return fmt.Errorf("%w in %s: compact needs %s there (the index's live data and a margin), and setting it aside failed after %s (%v); free some space and compact again: nothing was changed",
			ErrNoSpace, filepath.Dir(target), megabytes(need), megabytes(off), err)
	}
	ok, err := allocate(f, need)
	if err != nil {
		return "", aside(0, err)
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); !ok && off < need; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n := min(int64(len(buf)), need-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return "", aside(off, err)
		}
	}
	return f.Name(), f.Truncate(0)
}

// megabytes writes n bytes for a message.
func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// copyInto writes every bucket of src, nested ones included, with their
// keys, values and sequences, into the empty file tmp, as bbolt.Compact
// does, but looking at ctx between writes and under guard (a page of src
// that bbolt cannot read is ErrCorrupt, not a crash). Each page is filled
// whole: keys come in order.
func copyInto(ctx context.Context, src *bolt.DB, tmp string, mode fs.FileMode, pageSize int) error {
	dst, err := bolt.Open(tmp, mode, &bolt.Options{
		PageSize:     pageSize,
		FreelistType: bolt.FreelistMapType,
		NoGrowSync:   true, // the file is synced once, at the end
		Timeout:      time.Second,
	})
	if err != nil {
		return err
	}
	dst.NoSync = true
	c := &compactCopy{ctx: ctx, dst: dst}
	err = guard(func() error {
		return src.View(func(stx *bolt.Tx) error {
			var err error
			if c.tx, err = dst.Begin(true); err != nil {
				return err
			}
			err = stx.ForEach(func(name []byte, b *bolt.Bucket) error {
				nb, err := c.tx.CreateBucket(name)
				if err != nil {
					return err
				}
				if err := nb.SetSequence(b.Sequence()); err != nil {
					return err
				}
				return c.bucket(b, [][]byte{name})
			})
			if err == nil {
				err = c.tx.Commit()
				c.tx = nil
			}
			return err
		})
	})
	if c.tx != nil {
		c.tx.Rollback()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// compactCopy is the write transaction of copyInto, committed every
// compactTxBytes.
type compactCopy struct {
	ctx  context.Context
	dst  *bolt.DB
	tx   *bolt.Tx
	size int64 // bytes of keys and values put since the last commit
	puts int
}

// at returns the bucket named by path in the current transaction, set to
// fill its pages whole.
func (c *compactCopy) at(path [][]byte) *bolt.Bucket {
	b := c.tx.Bucket(path[0])
	for _, name := range path[1:] {
		b = b.Bucket(name)
	}
	b.FillPercent = 1.0
	return b
}

// bucket copies the keys, values and nested buckets of src into the
// bucket at path, created already.
func (c *compactCopy) bucket(src *bolt.Bucket, path [][]byte) error {
	dst := c.at(path)
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil { // a nested bucket (an empty value is not nil)
			sub := src.Bucket(k)
			nb, err := dst.CreateBucket(k)
			if err != nil {
				return err
			}
			if err := nb.SetSequence(sub.Sequence()); err != nil {
				return err
			}
			if err := c.bucket(sub, append(path[:len(path):len(path)], k)); err != nil {
				return err
			}
			dst = c.at(path) // the transaction may have been committed
			continue
		}
		if sz := int64(len(k) + len(v)); c.size > 0 && c.size+sz > compactTxBytes {
			if err := c.commit(); err != nil {
				return err
			}
			dst = c.at(path)
		}
		// v stays valid: it lies in src's map, and src's read
		// transaction outlives this one.
		if err := dst.Put(k, v); err != nil {
			return err
		}
		c.size += int64(len(k) + len(v))
		if c.puts++; c.puts%1024 == 0 {
			if err := c.ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit commits the current transaction and begins the next.
func (c *compactCopy) commit() error {
	err := c.tx.Commit()
	c.tx = nil
	if err != nil {
		return err
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	c.size = 0
	c.tx, err = c.dst.Begin(true)
	return err
}

// setTxid writes the meta pages of the closed bbolt file at path so that
// its current transaction is txid (the other meta page, txid-1, holds the
// same state): the metadata column and the Live Photo links are stamped
// with the transaction that wrote them last (syncColumn, syncLiveMeta), and
// a reader trusts them only at that transaction. Each meta goes to the page
// bbolt would have written it to (txid%2), so that the next commit, txid+1,
// overwrites the older one, as it must.
func setTxid(path string, txid uint64) error {
	if txid == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 2*boltMaxPageSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	head = head[:n]
	m, err := currentMeta(head)
	if err != nil {
		return err
	}
	ps := int(m.pageSize)
	// The current meta record, as bbolt wrote it.
	var rec []byte
	for p := range 2 {
		off := p*ps + boltPageHeader
		if got, ok := parseMeta(head[off:]); ok && got == m {
			rec = append([]byte(nil), head[off:off+boltMetaSize]...)
		}
	}
	if rec == nil {
		return fmt.Errorf("%w: no meta page holds the current meta", ErrCorrupt)
	}
	ne := binary.NativeEndian
	for _, t := range []uint64{txid - 1, txid} { // the current one last
		page := int64(t % 2)
		ne.PutUint64(rec[48:], t)
		h := fnv.New64a()
		h.Write(rec[:boltMetaSummed])
		ne.PutUint64(rec[boltMetaSummed:], h.Sum64())
		hdr := make([]byte, boltPageHeader)
		ne.PutUint64(hdr, uint64(page))
		ne.PutUint16(hdr[8:], boltMetaFlag)
		if _, err := f.WriteAt(append(hdr, rec...), page*int64(ps)); err != nil {
			return err
		}
	}
	return f.Close()
}

// verifyCompact opens the new file as a reader would and checks that it
// is an index at transaction txid.
func verifyCompact(path string, txid uint64) error {
	db, err := openBolt(path, true, time.Second)
	if err != nil {
		return err
	}
	defer closeDB(db)
	return guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			if got := uint64(tx.ID()); got != txid {
				return fmt.Errorf("it is at transaction %d, not %d", got, txid)
			}
			_, err := readMeta(tx)
			return err
		})
	})
}

// FreeBytes is the size of the index file's free pages: space its later
// commits reuse, which Compact gives back to the file system. It reads
// the file's meta and free list only (0 when the file at the index's path
// is no longer the one this snapshot reads).
func (s *Snapshot) FreeBytes() (int64, error) {
	path := s.tx.DB().Path()
	m, free, err := freeList(path)
	if err != nil {
		// A read torn by a commit or a file renamed in: once more.
		if m, free, err = freeList(path); err != nil {
			return 0, fmt.Errorf("free pages of %s: %w", path, err)
		}
	}
	if m.txid != uint64(s.tx.ID()) || int64(m.pgid)*int64(m.pageSize) != s.tx.Size() {
		return 0, nil // replaced or written since this snapshot began
	}
	return int64(len(free)) * int64(m.pageSize), nil
}
