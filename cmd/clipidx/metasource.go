package main

import (
	"time"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// metaSource is where search and serve read the records' metadata (capture
// time, GPS, place, camera) in the read session s: the index's own.
func metaSource(s *store.Snapshot) search.Metadata { return s }

// takenText is a record's capture time on the camera's clock, to the
// second, or "-" when unknown.
func takenText(m *store.Meta) string {
	if m == nil || m.TakenSource == "" {
		return "-"
	}
	return time.Unix(m.Taken, 0).UTC().Format(time.DateTime)
}
