package export

import (
	"encoding/binary"

	"github.com/clipidx/clipidx/store"
)

// joinF16Go is the reference of joinF16: it joins n stored halves (hi and
// lo, little-endian u16 each, see store.Join) into float32 values and
// writes them to dst as little-endian float16 (f16).
func joinF16Go(dst, hi, lo []byte, n int) {
	_, _, _ = dst[2*n-1], hi[2*n-1], lo[2*n-1]
	for i := range n {
		x := store.Join(binary.LittleEndian.Uint16(hi[2*i:]), binary.LittleEndian.Uint16(lo[2*i:]))
		binary.LittleEndian.PutUint16(dst[2*i:], f16(x))
	}
}
