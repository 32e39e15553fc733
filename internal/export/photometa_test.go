package export

import (
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/clipidx/clipidx/store"
)

// TestPhotoGPSRounded: the GPS columns hold the position to 7 decimals
// of a degree and the altitude to the centimetre, so a reader prints
// 2.3522, not the 2.3522000000000003 an EXIF rational gives.
func TestPhotoGPSRounded(t *testing.T) {
	for _, tc := range []struct {
		m    store.Meta
		want map[string]string
	}{
		{store.Meta{HasGPS: true, Lat: 48.8566, Lon: 2.3522000000000003, HasAlt: true, Alt: 35.300000000000004},
			map[string]string{colLat: "48.8566", colLon: "2.3522", colAlt: "35.3"}},
		{store.Meta{HasGPS: true, Lat: -10.100000000000001, Lon: -179.98999999999998},
			map[string]string{colLat: "-10.1", colLon: "-179.99"}},
		{store.Meta{HasGPS: true, Lat: -33.890812349, Lon: 151.27434449, HasAlt: true, Alt: -12.345},
			map[string]string{colLat: "-33.8908123", colLon: "151.2743445", colAlt: "-12.35"}},
	} {
		got := map[string]string{}
		setPhoto(func(name string, v parquet.Value, _ bool) {
			if v.Kind() == parquet.Double {
				got[name] = strconv.FormatFloat(v.Double(), 'g', -1, 64)
			}
		}, &tc.m)
		for col, w := range tc.want {
			if got[col] != w {
				t.Errorf("%+v: %s = %s, want %s", tc.m, col, got[col], w)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%+v: columns %v, want %v", tc.m, got, tc.want)
		}
	}
}
