package index

import (
	"path/filepath"
	"strings"
)

// imageExts are the extensions (lower case) the walk picks up. The content
// decides the rest: the preprocess package recognises the format and
// reports what it cannot read with ErrUnsupported naming it, so that such
// files are listed as failures rather than silently skipped. false marks
// the formats that not every file or build decodes: HEIC/HEIF and AVIF
// (where their embedded decoders are built), camera RAW (through a usable
// embedded preview), JPEG XL and Photoshop (never); see preprocess.Formats.
var imageExts = map[string]bool{
	".jpg": true, ".jpeg": true, ".jpe": true, ".png": true, ".gif": true, ".webp": true,
	".bmp": true, ".tif": true, ".tiff": true,
	".heic": false, ".heif": false, ".avif": false, ".jxl": false,
	".psd": false, ".psb": false, // Photoshop, and its large document format
	// camera RAW
	".cr2": false, ".cr3": false, ".nef": false, ".nrw": false, ".arw": false, ".srf": false,
	".sr2": false, ".dng": false, ".raf": false, ".orf": false, ".rw2": false, ".srw": false,
	".pef": false, ".erf": false, ".3fr": false, ".mef": false, ".mos": false, ".rwl": false,
	".iiq": false, ".kdc": false, ".dcr": false, ".x3f": false,
}

// IsImageName reports whether a file name has an image extension (any case).
func IsImageName(name string) bool {
	_, ok := imageExts[strings.ToLower(filepath.Ext(name))]
	return ok
}

// skipName reports whether a directory entry is hidden or operating-system
// clutter that never holds photos worth indexing.
func skipName(name string) bool {
	if strings.HasPrefix(name, ".") { // hidden, .DS_Store, AppleDouble ._*, .thumbnails, .Trash
		return true
	}
	switch strings.ToLower(name) {
	case "@eadir", "thumbs.db", "desktop.ini", "$recycle.bin", "system volume information", "lost+found":
		return true
	}
	return false
}
