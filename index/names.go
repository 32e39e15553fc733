package index

import (
	"path/filepath"
	"strings"
)

// imageExts are the extensions (lower case) the walk picks up. The content
// decides the rest: the preprocess package recognises the format and
// reports the unsupported ones (false here: HEIC/HEIF, AVIF, JPEG XL,
// camera RAW) with ErrUnsupported naming them, so that they are listed as
// failures rather than silently skipped.
var imageExts = map[string]bool{
	".jpg": true, ".jpeg": true, ".jpe": true, ".png": true, ".gif": true, ".webp": true,
	".bmp": true, ".tif": true, ".tiff": true,
	".heic": false, ".heif": false, ".avif": false, ".jxl": false,
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
