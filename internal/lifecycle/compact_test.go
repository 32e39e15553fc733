package lifecycle

import (
	"context"
	"maps"
	"os"

	"github.com/clipidx/clipidx/store"
)

// compact gives the index's free space back (clipidx compact) while the
// server is searched: every answer lists records the index holds, and
// afterwards the index holds the same records and vectors (unused ones
// included: compact frees nothing, so the contents a build must not embed
// again are the same), its metadata column is as current as it was, the
// file is no larger, and the server serves every record.
func (l *lab) compact() {
	l.t.Helper()
	l.step("compact")
	prev := l.index()
	stored, unused := l.stored()
	column := l.columnCurrent()
	asked := l.askDuring(prev, prev)
	sum, err := store.Compact(context.Background(), l.db, store.CompactOptions{})
	if err != nil {
		l.fatalf("compact: %v", err)
	}
	if err := asked(); err != nil {
		l.fatalf("serve during compact: %v", err)
	}
	fi, err := os.Stat(l.db)
	if err != nil {
		l.fatalf("compact: %v", err)
	}
	if sum.After != fi.Size() || sum.After > sum.Before {
		l.fatalf("compact said %d → %d bytes; the file is %d", sum.Before, sum.After, fi.Size())
	}
	if err := store.Check(l.db); err != nil {
		l.fatalf("check after compact: %v", err)
	}
	l.compare("compact", l.index(), prev)
	if now, n := l.stored(); !maps.Equal(now, stored) || n != unused {
		l.fatalf("compact changed the vectors held: %d (%d unused), were %d (%d unused)", len(now), n, len(stored), unused)
	}
	if now := l.columnCurrent(); now != column {
		l.fatalf("the metadata column was current: %v before compact, %v after", column, now)
	}
	l.serveCheck()
}

// columnCurrent reports whether the index's metadata column is current
// (readers use it rather than the records).
func (l *lab) columnCurrent() bool {
	l.t.Helper()
	r, err := store.OpenReader(l.db, store.ReaderOptions{})
	if err != nil {
		l.fatalf("open index: %v", err)
	}
	defer r.Close()
	current := false
	err = r.View(func(s *store.Snapshot) error {
		col, err := s.MetaColumn()
		current = col != nil
		return err
	})
	if err != nil {
		l.fatalf("read index: %v", err)
	}
	return current
}
