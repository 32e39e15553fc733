package export

import (
	"encoding/binary"
	"io"
)

// faissFlatHeader is the start of a FAISS IndexFlatIP file (faiss
// impl/index_write.cpp, write_index for an IndexFlat): fourcc "IxFI",
// then the index header: int32 d, int64 ntotal, two int64 dummies of
// 1<<20, one byte is_trained, int32 metric_type (0 = inner product; no
// metric_arg below type 2), then the codes as a vector: uint64 count of
// float32 values (ntotal·d), the values row major. Little-endian, no
// padding.
func faissFlatHeader(rows, dim int) []byte {
	b := make([]byte, 0, 4+4+8+8+8+1+4+8)
	b = append(b, "IxFI"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(dim))
	b = binary.LittleEndian.AppendUint64(b, uint64(rows))
	b = binary.LittleEndian.AppendUint64(b, 1<<20)
	b = binary.LittleEndian.AppendUint64(b, 1<<20)
	b = append(b, 1)                           // is_trained
	b = binary.LittleEndian.AppendUint32(b, 0) // METRIC_INNER_PRODUCT
	return binary.LittleEndian.AppendUint64(b, uint64(rows)*uint64(dim))
}

// writeFaissHeader writes faissFlatHeader to w.
func writeFaissHeader(w io.Writer, rows, dim int) error {
	_, err := w.Write(faissFlatHeader(rows, dim))
	return err
}
