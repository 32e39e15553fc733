package gemm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackedBytesRoundTrip checks that panels taken out as bytes and used
// again from a copy (as from a mapped file) give products equal bit for
// bit to those of the panels packed in memory, bf16 and float32, and that
// bytes of the wrong length or alignment are refused.
func TestPackedBytesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 5, 70, 300 // n, k not multiples of any panel
	w := Matrix{Rows: n, Cols: k, Dtype: F32, F32: make([]float32, n*k)}
	for i := range w.F32 {
		w.F32[i] = float32(r.NormFloat64())
	}
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	p := NewPool(2)
	defer p.Close()
	// aligned copies b into fresh memory aligned to 4 bytes (as a
	// mapping's pages are, and more).
	aligned := func(b []byte) []byte {
		c := asBytes(make([]float32, (len(b)+3)/4))[:len(b)]
		copy(c, b)
		return c
	}

	pb, err := PackBF16(&w)
	if err != nil {
		t.Fatal(err)
	}
	if len(pb.Bytes()) != BF16Bytes(n, k) {
		t.Fatalf("bf16 bytes %d, BF16Bytes %d", len(pb.Bytes()), BF16Bytes(n, k))
	}
	cb := aligned(pb.Bytes())
	qb, err := PackedBF16From(n, k, cb)
	if err != nil {
		t.Fatal(err)
	}
	want, got := make([]float32, m*n), make([]float32, m*n)
	p.LinearBF16(want, x, m, pb, nil)
	p.LinearBF16(got, x, m, qb, nil)
	if !slices.Equal(got, want) {
		t.Error("bf16 products from the bytes differ from the packed matrix's")
	}
	if _, err := PackedBF16From(n, k, cb[:len(cb)-2]); err == nil {
		t.Error("PackedBF16From took short bytes")
	}
	if _, err := PackedBF16From(n, k+32, cb); err == nil {
		t.Error("PackedBF16From took bytes of another shape")
	}

	packed := w
	if !p.Pack(&packed) {
		t.Skip("Pack packs nothing on this pool (system BLAS)")
	}
	b, layout := packed.PackedBytes()
	if layout != PackLayout() || len(b) != PackedF32Bytes(n, k) {
		t.Fatalf("PackedBytes: %d bytes under %q, want %d under %q", len(b), layout, PackedF32Bytes(n, k), PackLayout())
	}
	cf := aligned(b)
	used := Matrix{Rows: n, Cols: k, Dtype: F32}
	if err := used.UsePacked(cf); err != nil {
		t.Fatal(err)
	}
	p.Linear(want, x, m, &packed, nil)
	p.Linear(got, x, m, &used, nil)
	if !slices.Equal(got, want) {
		t.Error("float32 products from the bytes differ from the packed matrix's")
	}
	if err := used.UsePacked(cf[:len(cf)-4]); err == nil {
		t.Error("UsePacked took short bytes")
	}
	odd := asBytes(make([]float32, len(cf)/4+1))[1 : 1+len(cf)]
	if err := used.UsePacked(odd); err == nil {
		t.Error("UsePacked took misaligned bytes")
	}
}
