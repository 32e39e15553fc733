//go:build !(amd64 || arm64) || purego

package preprocess

// Without assembly the JPEG kernels are their reference loops.

func jpegRow(dst, y, cb, cr []byte) { jpegRowGeneric(dst, y, cb, cr) }

func idct(in *[64]int32, dst []byte, stride int) { idctGeneric(in, dst, stride) }

func h2v2Row(out, near, far []byte, sum []int32) { h2v2RowGeneric(out, near, far, sum) }
