package export

import (
	"math"

	"github.com/parquet-go/parquet-go"

	"github.com/clipidx/clipidx/store"
)

// The photo metadata columns of the clip-retrieval metadata files: what
// the build read from each file (store.Meta), null where the index holds
// nothing (no GPS, no camera, an index not rebuilt since). Like the other
// fixed columns, they win over a sample's JSON field of the same name.
const (
	colTaken       = "taken"        // RFC 3339, or the camera's wall clock without an offset when the file records none
	colTakenSource = "taken_source" // exif, video or mtime
	colLat         = "gps_latitude" // WGS84 degrees
	colLon         = "gps_longitude"
	colAlt         = "gps_altitude" // metres above sea level
	colCity        = "city"
	colRegion      = "region"
	colCountry     = "country"
	colCountryCode = "country_code" // ISO 3166-1 alpha-2
	colMake        = "camera_make"
	colModel       = "camera_model"
	colLens        = "lens"
	colWidth       = "pixel_width" // as displayed
	colHeight      = "pixel_height"
)

var photoColumns = map[string]parquet.Node{
	colTaken: parquet.String(), colTakenSource: parquet.String(),
	colLat: parquet.Leaf(parquet.DoubleType), colLon: parquet.Leaf(parquet.DoubleType), colAlt: parquet.Leaf(parquet.DoubleType),
	colCity: parquet.String(), colRegion: parquet.String(), colCountry: parquet.String(), colCountryCode: parquet.String(),
	colMake: parquet.String(), colModel: parquet.String(), colLens: parquet.String(),
	colWidth: parquet.Int(64), colHeight: parquet.Int(64),
}

// addPhotoColumns adds the photo columns, each optional, to a schema.
func addPhotoColumns(g parquet.Group) {
	for k, n := range photoColumns {
		g[k] = parquet.Optional(n)
	}
}

// setPhoto fills the photo columns of a row from m.
func setPhoto(set func(name string, v parquet.Value, optional bool), m *store.Meta) {
	if m == nil {
		return
	}
	str := func(col, s string) {
		if s != "" {
			set(col, text(s), true)
		}
	}
	str(colTaken, m.TakenText())
	str(colTakenSource, m.TakenSource)
	if m.HasGPS {
		set(colLat, parquet.DoubleValue(roundDegrees(m.Lat)), true)
		set(colLon, parquet.DoubleValue(roundDegrees(m.Lon)), true)
	}
	if m.HasAlt {
		set(colAlt, parquet.DoubleValue(roundMetres(m.Alt)), true)
	}
	str(colCity, m.City)
	str(colRegion, m.Region)
	str(colCountry, m.Country)
	str(colCountryCode, m.CountryCode)
	str(colMake, m.Make)
	str(colModel, m.Model)
	str(colLens, m.Lens)
	if m.Width > 0 && m.Height > 0 {
		set(colWidth, parquet.Int64Value(int64(m.Width)), true)
		set(colHeight, parquet.Int64Value(int64(m.Height)), true)
	}
}

// roundDegrees rounds a latitude or longitude to 7 decimals (about 1 cm,
// finer than any GPS), as search --json and the web API print them: the
// double nearest a decimal reads back as that decimal (2.3522, not the
// 2.3522000000000003 an EXIF rational gives).
func roundDegrees(x float64) float64 { return math.Round(x*1e7) / 1e7 }

// roundMetres rounds an altitude to the centimetre, for the same reason.
func roundMetres(x float64) float64 { return math.Round(x*100) / 100 }
