package main

import (
	"time"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// metaSource is where search and serve read the records' metadata (capture
// time, GPS, place, camera) in the read session s. The index does not hold
// metadata yet: no record has any, so date, place and camera qualifiers
// keep nothing and kind: alone lists undated records. Once store.Snapshot
// serves EachMeta and Meta, this returns s.
func metaSource(s *store.Snapshot) search.Metadata { return noMeta{} }

// noMeta is an index where no record has metadata.
type noMeta struct{}

func (noMeta) EachMeta(func(string, store.Meta) error) error { return nil }
func (noMeta) Meta(string) (store.Meta, bool, error)         { return store.Meta{}, false, nil }

// takenText is a record's capture time on the camera's clock, to the
// second, or "-" when unknown.
func takenText(m *store.Meta) string {
	if m == nil || m.TakenSource == "" {
		return "-"
	}
	return time.Unix(m.Taken, 0).UTC().Format(time.DateTime)
}
