package store

// Meta is what a record's file says of when, where and with what it was
// taken: read at build time from EXIF, XMP or the container, never from the
// model. The zero value means nothing is known.
type Meta struct {
	// Taken is the capture time as the camera's clock showed it (its wall
	// clock), in seconds since 1970-01-01T00:00:00 read as if that clock
	// were UTC; TakenNs adds the sub-second part. Date qualifiers
	// (year:2019, after:2019-06-01) compare this wall-clock date, which is
	// the date the photographer saw.
	Taken   int64
	TakenNs int32
	// Offset is the camera clock's offset from UTC in minutes (EXIF
	// OffsetTimeOriginal, or the container's zone), valid when HasOffset.
	// The instant is Taken - Offset*60.
	Offset    int16
	HasOffset bool
	// TakenSource says where Taken came from: TakenEXIF, TakenVideo,
	// TakenMtime, or "" when there is no time at all.
	TakenSource string
	// GPS position, WGS84 degrees and metres above sea level.
	HasGPS   bool
	Lat, Lon float64
	HasAlt   bool
	Alt      float64
	// Camera and lens as the file names them (trimmed), "" when absent.
	Make, Model, Lens string
	// Width and Height are the pixel size as displayed (after the
	// orientation is applied); 0 when unknown.
	Width, Height int
	// Place is the nearest populated place to the GPS position, from the
	// table embedded in the binary; empty without GPS or far from any.
	City, Region, Country, CountryCode string
	// Motion is set on a Motion Photo: a still that carries its video
	// (preprocess.FindMotionVideo). MotionRead says a reader that looks
	// for one read the file: a record of an older clipidx has neither.
	Motion, MotionRead bool
	// Live is set on a Live Photo's still: a Live Photo movie record
	// (File.LiveVideo) names it. The store keeps it (a Batch.PutMeta
	// cannot set it).
	Live bool
}

// Where Meta.Taken came from.
const (
	TakenEXIF  = "exif"  // DateTimeOriginal (or its HEIC/AVIF/PNG/RAW equivalent)
	TakenVideo = "video" // the container's creation time
	TakenMtime = "mtime" // the file's modification time, in the build's local zone
)

// FrameSep separates a video's path from a frame's time in a frame
// record's path: "/videos/trip.mp4#t=83.4" (the W3C media-fragment form).
const FrameSep = "#t="
