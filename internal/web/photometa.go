package web

import (
	"math"

	"github.com/clipidx/clipidx/store"
)

// PhotoMeta is what a result says of when, where and with what its file
// was taken, and its size: the fields of `clipidx search --json`, which
// prints this type too, so that the two agree. Absent fields are unknown.
type PhotoMeta struct {
	Taken string `json:"taken,omitempty"` // RFC 3339, or the camera's wall clock when it records no offset
	// TakenOffsetUnknown is set when the file records no UTC offset:
	// Taken then has none ("2019-07-14T01:00:00", not RFC 3339).
	TakenOffsetUnknown bool    `json:"taken_offset_unknown,omitempty"`
	TakenSource        string  `json:"taken_source,omitempty"` // exif, video or mtime
	Place              *Place  `json:"place,omitempty"`
	GPS                *GPS    `json:"gps,omitempty"`
	Camera             *Camera `json:"camera,omitempty"`
	Width              int     `json:"width,omitempty"` // pixels, as displayed
	Height             int     `json:"height,omitempty"`
}

// GPS is a WGS84 position in degrees (RoundDegrees), and the altitude in
// metres above sea level when known (RoundMetres).
type GPS struct {
	Lat float64  `json:"lat"`
	Lon float64  `json:"lon"`
	Alt *float64 `json:"alt,omitempty"`
}

// Place is the nearest populated place to a result's GPS position.
type Place struct {
	City        string `json:"city,omitempty"`
	Region      string `json:"region,omitempty"`
	Country     string `json:"country,omitempty"`
	CountryCode string `json:"country_code,omitempty"`
}

// Camera is the camera and lens as the file names them.
type Camera struct {
	Make  string `json:"make,omitempty"`
	Model string `json:"model,omitempty"`
	Lens  string `json:"lens,omitempty"`
}

// NewPhotoMeta is the printed form of m.
func NewPhotoMeta(m store.Meta) PhotoMeta {
	p := PhotoMeta{Taken: m.TakenText(), TakenSource: m.TakenSource, Width: m.Width, Height: m.Height}
	p.TakenOffsetUnknown = p.Taken != "" && !m.HasOffset
	if m.City != "" || m.Country != "" {
		p.Place = &Place{m.City, m.Region, m.Country, m.CountryCode}
	}
	if m.HasGPS {
		p.GPS = &GPS{Lat: RoundDegrees(m.Lat), Lon: RoundDegrees(m.Lon)}
		if m.HasAlt {
			alt := RoundMetres(m.Alt)
			p.GPS.Alt = &alt
		}
	}
	if m.Make != "" || m.Model != "" || m.Lens != "" {
		p.Camera = &Camera{m.Make, m.Model, m.Lens}
	}
	return p
}

// RoundDegrees rounds a latitude or longitude to 7 decimals (about 1 cm,
// finer than any GPS): the double nearest a decimal prints as that decimal
// in JSON (2.3522, not the 2.3522000000000003 an EXIF rational gives).
func RoundDegrees(x float64) float64 { return math.Round(x*1e7) / 1e7 }

// RoundMetres rounds an altitude to the centimetre, for the same reason.
func RoundMetres(x float64) float64 { return math.Round(x*100) / 100 }

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
				pm := NewPhotoMeta(m)
				res[i].PhotoMeta = &pm
				res[i].Motion = m.Motion
			}
			// The page asks of a JPEG or HEIC only; a video's frame and
			// a webdataset sample (served from its shard, never as a
			// Motion Photo: liveVideo) carry no video to ask about.
			res[i].MotionUnread = !m.MotionRead && res[i].Video == "" && !store.NamesSample(res[i].Path)
		}
		return nil
	})
}
