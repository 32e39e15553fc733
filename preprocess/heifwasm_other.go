//go:build !amd64 && !arm64 && !386 && !nodynamic

package preprocess

import "fmt"

// On this architecture gen2brain/heic and gen2brain/avif do not build
// (their purego dependency does not support it), so there are no decoders:
// HEIC and AVIF files are reported as unsupported, naming why. Building
// with -tags nodynamic brings them back.
var heifWASMgz, avifWASMgz []byte

var errNoWASM = fmt.Errorf("%w: HEIC/AVIF decoding is not built for this architecture (build with -tags nodynamic)", ErrUnsupported)
