package main

import (
	"fmt"
	"strings"

	"github.com/clipidx/clipidx/internal/web"
	"github.com/clipidx/clipidx/store"
)

// This file prints the photo metadata the index keeps (store.Meta): the
// --json fields and --long columns of search, and the lines of status.

// metaJSON is what --json adds to a search result (web.PhotoMeta, as the
// web API gives it); every field is left out when the index knows nothing
// of it.
type metaJSON struct {
	web.PhotoMeta
	Motion bool `json:"motion,omitempty"` // a Motion Photo: the still carries a video
}

// metaOf is the printed form of m.
func metaOf(m store.Meta) metaJSON {
	return metaJSON{PhotoMeta: web.NewPhotoMeta(m), Motion: m.Motion}
}

// addMeta fills the metadata of each hit from the index at db, and the
// movie of a Live Photo's still.
func addMeta(db string, hits []hit) error {
	if len(hits) == 0 {
		return nil
	}
	return viewIndex(db)(func(s *store.Snapshot) error {
		for i := range hits {
			m, ok, err := s.Meta(hits[i].Path)
			if err != nil {
				return err
			}
			if ok {
				hits[i].metaJSON = metaOf(m)
			}
			if hits[i].Video == "" {
				if hits[i].Live, err = s.LiveMovie(hits[i].Path); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// longColumns are the --long columns of a hit: the capture date and time
// (the camera's wall clock; "~" before a file's modification time) and the
// place, "-" when unknown.
func (h hit) longColumns() string {
	date := "-"
	if t := h.Taken; len(t) >= 16 {
		date = t[:10] + " " + t[11:16]
		if h.TakenSource == store.TakenMtime {
			date = "~" + date
		}
	}
	place := "-"
	if p := h.Place; p != nil {
		var parts []string
		for _, s := range []string{p.City, p.Country} {
			if s != "" {
				parts = append(parts, s)
			}
		}
		place = strings.Join(parts, ", ")
	}
	return "\t" + date + "\t" + place
}

// metaStats is what status says of the photo metadata.
type metaStats struct {
	Records  int    `json:"records"`                // records with metadata
	First    string `json:"first,omitempty"`        // earliest capture time, as its record's taken
	Last     string `json:"last,omitempty"`         // latest
	FromEXIF int    `json:"from_file"`              // capture time read from the file (EXIF or the container)
	Mtime    int    `json:"from_mtime"`             // capture time is the file's modification time
	GPS      int    `json:"gps"`                    // records with a GPS position
	Motion   int    `json:"motion_photos"`          // Motion Photos (a video inside the still)
	Places   string `json:"places_table,omitempty"` // the place table the names come from
}

// readMetaStats summarises the metadata of every record.
func readMetaStats(s *store.Snapshot) (metaStats, error) {
	sum, err := s.MetaCounts()
	if err != nil {
		return metaStats{}, err
	}
	return metaStats{Records: sum.Records, FromEXIF: sum.FromFile, Mtime: sum.Mtime, GPS: sum.GPS, Motion: sum.Motion,
		First: sum.First.TakenText(), Last: sum.Last.TakenText(), Places: s.PlacesVersion()}, nil
}

// printMetaStats prints the status lines of the photo metadata.
func printMetaStats(out interface{ Write([]byte) (int, error) }, st metaStats, images int) {
	if st.Records == 0 {
		fmt.Fprintln(out, "dates:       none recorded yet (the next clipidx build reads them, without the model)")
		return
	}
	if st.First != "" {
		fmt.Fprintf(out, "dates:       %s to %s (%d from the files, %d from modification times)\n",
			shortTime(st.First), shortTime(st.Last), st.FromEXIF, st.Mtime)
	}
	fmt.Fprintf(out, "gps:         %d of %d %s\n", st.GPS, images, plural(images, "image", "images"))
	if st.Motion > 0 {
		fmt.Fprintf(out, "motion:      %d Motion %s (a video inside the still)\n", st.Motion, plural(st.Motion, "Photo", "Photos"))
	}
}

// shortTime is an RFC 3339 time as "2006-01-02 15:04".
func shortTime(s string) string {
	if len(s) >= 16 {
		return s[:10] + " " + s[11:16]
	}
	return s
}
