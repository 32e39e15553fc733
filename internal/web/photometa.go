package web

import (
	"math"

	"github.com/clipidx/clipidx/store"
)

// PhotoMeta is what an answer's result says of when, where and with what
// its file was taken (the fields of `clipidx search --json`); the viewer
// shows it. Absent fields are unknown.
type PhotoMeta struct {
	Taken string `json:"taken,omitempty"` // RFC 3339, or the camera's wall clock when it records no offset
	// TakenOffsetUnknown is set when the file records no UTC offset:
	// Taken then has none ("2019-07-14T01:00:00", not RFC 3339).
	TakenOffsetUnknown bool   `json:"taken_offset_unknown,omitempty"`
	TakenSource        string `json:"taken_source,omitempty"` // exif, video or mtime
	Place              *Place `json:"place,omitempty"`
	GPS                *GPS   `json:"gps,omitempty"`
	Camera             string `json:"camera,omitempty"` // make and model, then the lens
}

// GPS is a WGS84 position in degrees, as `clipidx search --json` gives it.
type GPS struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Place is the nearest populated place to a result's GPS position.
type Place struct {
	City    string `json:"city,omitempty"`
	Region  string `json:"region,omitempty"`
	Country string `json:"country,omitempty"`
}

// photoMeta is the printed form of m.
func photoMeta(m store.Meta) *PhotoMeta {
	p := &PhotoMeta{Taken: m.TakenText(), TakenSource: m.TakenSource}
	p.TakenOffsetUnknown = p.Taken != "" && !m.HasOffset
	if m.City != "" || m.Country != "" {
		p.Place = &Place{m.City, m.Region, m.Country}
	}
	if m.HasGPS {
		p.GPS = &GPS{RoundDegrees(m.Lat), RoundDegrees(m.Lon)}
	}
	cam := m.Model
	if m.Make != "" && !startsWithFold(m.Model, m.Make) {
		cam = joinNonEmpty(" ", m.Make, m.Model) // "Apple iPhone 8", but not "PENTAX PENTAX K-1"
	}
	p.Camera = joinNonEmpty(" · ", cam, m.Lens)
	return p
}

// RoundDegrees rounds a latitude or longitude to 7 decimals (about 1 cm,
// finer than any GPS): the double nearest a decimal prints as that decimal
// in JSON (2.3522, not the 2.3522000000000003 an EXIF rational gives).
func RoundDegrees(x float64) float64 { return math.Round(x*1e7) / 1e7 }

// RoundMetres rounds an altitude to the centimetre, for the same reason.
func RoundMetres(x float64) float64 { return math.Round(x*100) / 100 }

func startsWithFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		a, b := s[i], prefix[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func joinNonEmpty(sep string, parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += sep
		}
		out += p
	}
	return out
}

// addPhotoMeta fills the metadata of the results from the index (a short
// read of its own; an error leaves them without).
func (s *Server) addPhotoMeta(res []Result) error {
	return s.view(func(snap *store.Snapshot) error {
		for i := range res {
			m, ok, err := snap.Meta(res[i].Path)
			if err != nil {
				return err
			}
			if ok {
				res[i].PhotoMeta = photoMeta(m)
				res[i].Motion = m.Motion
			}
			res[i].MotionUnread = !m.MotionRead && res[i].Video == "" // the page asks of a JPEG or HEIC only
		}
		return nil
	})
}
