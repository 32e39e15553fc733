//go:build amd64 || arm64 || 386 || nodynamic

package preprocess

import (
	_ "unsafe" // for go:linkname

	_ "github.com/gen2brain/avif" // for its embedded decode.wasm.gz
	_ "github.com/gen2brain/heic" // for its embedded heif.wasm.gz
)

// The WebAssembly decoders gen2brain/heic and gen2brain/avif embed (see
// heifwasm.go). Importing those packages pulls in purego for their unused
// system-library path, which builds only on some architectures: elsewhere
// (heifwasm_other.go) HEIC and AVIF are reported as unsupported.

//go:linkname heifWASMgz github.com/gen2brain/heic.heifWasm
var heifWASMgz []byte

//go:linkname avifWASMgz github.com/gen2brain/avif.decodeWasm
var avifWASMgz []byte

// errNoWASM is never returned on these architectures.
var errNoWASM error
