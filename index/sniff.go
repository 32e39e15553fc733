package index

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Format is an image container recognised from its first bytes.
type Format string

// Formats recognised by Sniff. The last three are recognised so that they
// can be reported as unsupported rather than as corrupt.
const (
	FormatUnknown Format = ""
	FormatJPEG    Format = "jpeg"
	FormatPNG     Format = "png"
	FormatGIF     Format = "gif"
	FormatWebP    Format = "webp"
	FormatBMP     Format = "bmp"
	FormatTIFF    Format = "tiff"
	FormatHEIC    Format = "heic"
	FormatAVIF    Format = "avif"
)

// Supported reports whether the pipeline can decode f.
func (f Format) Supported() bool {
	switch f {
	case FormatJPEG, FormatPNG, FormatGIF, FormatWebP, FormatBMP, FormatTIFF:
		return true
	}
	return false
}

// Sniff identifies an image container from the first bytes of a file.
func Sniff(b []byte) Format {
	switch {
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return FormatJPEG
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return FormatPNG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return FormatGIF
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return FormatWebP
	case len(b) >= 14 && bytes.HasPrefix(b, []byte("BM")):
		return FormatBMP
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return FormatTIFF
	case len(b) >= 12 && bytes.Equal(b[4:8], []byte("ftyp")):
		switch string(b[8:12]) {
		case "avif", "avis":
			return FormatAVIF
		case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1":
			return FormatHEIC
		}
	}
	return FormatUnknown
}

// imageExts are the extensions (lower case) the walk picks up; false marks
// formats recognised only to be reported as unsupported.
var imageExts = map[string]bool{
	".jpg": true, ".jpeg": true, ".jpe": true, ".png": true, ".gif": true, ".webp": true,
	".bmp": true, ".tif": true, ".tiff": true,
	".heic": false, ".heif": false, ".avif": false,
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
