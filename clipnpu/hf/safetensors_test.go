package hf

import (
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// rawFile builds a safetensors file from a literal JSON header and n data bytes.
func rawFile(header string, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, n)...)
}

func TestParseSafetensors(t *testing.T) {
	cases := []struct {
		name string
		file []byte
		err  string // "" = valid
	}{
		{"valid", rawFile(`{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"BF16","shape":[],"data_offsets":[24,26]},"__metadata__":{"format":"pt"}}`, 26), ""},
		{"empty header object", rawFile(`{}`, 0), ""},
		{"unknown dtype is parsed", rawFile(`{"a":{"dtype":"Q4","shape":[7],"data_offsets":[0,5]}}`, 5), ""},
		{"short file", []byte{1, 2, 3}, "shorter than the 8-byte"},
		{"header longer than file", append(binary.LittleEndian.AppendUint64(nil, 1000), '{', '}'), "does not fit"},
		{"not JSON", rawFile(`{"a":`, 0), "malformed"},
		{"offsets past the end", rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 12), "truncated file: 75 bytes, but tensor \"a\" ends at byte 79"},
		{"reversed offsets", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`, 12), "data_offsets [8, 4]"},
		{"first truncated tensor by name", rawFile(`{"z":{"dtype":"F32","shape":[4],"data_offsets":[16,32]},"b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"a":{"dtype":"F32","shape":[4],"data_offsets":[32,48]}}`, 20), "tensor \"a\" ends"},
		{"size mismatch", rawFile(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,4]}}`, 4), "needs 8 bytes"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "dimension -1"},
		{"missing offsets", rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, 4), "lacks"},
		{"overflowing shape", rawFile(`{"a":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,4]}}`, 4), "overflows"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), "overlap"},
		{"bad metadata", rawFile(`{"__metadata__":{"x":1}}`, 0), "__metadata__"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := parseSafetensors(c.file, int64(len(c.file)))
			if c.err == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one containing %q (header %+v)", err, c.err, h)
			}
		})
	}
	h, err := parseSafetensors(cases[0].file, int64(len(cases[0].file)))
	if err != nil {
		t.Fatal(err)
	}
	a := h.Tensors["a"]
	if a.Dtype != "F32" || len(a.Shape) != 2 || a.Shape[1] != 3 || a.Begin != h.DataOff || a.End != h.DataOff+24 || h.Metadata["format"] != "pt" {
		t.Errorf("parsed %+v, metadata %v", a, h.Metadata)
	}
}

// FuzzParseSafetensors: any input either fails cleanly or yields tensors
// that lie inside the file, do not overlap and match their dtype's size.
func FuzzParseSafetensors(f *testing.F) {
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}`, 24))
	f.Add(rawFile(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"__metadata__":{"k":"v"}}`, 2))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[],"data_offsets":[4,8]}}`, 8))
	f.Add([]byte{})
	// The header of a real checkpoint (the shared fixture beside the
	// repository, when present), with too little data after it.
	if b, err := os.ReadFile("../../shared/fixtures/tiny-clip-h/model.safetensors"); err == nil && len(b) > 9000 {
		n := binary.LittleEndian.Uint64(b)
		f.Add(append(b[:8+n:8+n], make([]byte, 64)...))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		h, err := parseSafetensors(file, int64(len(file)))
		if err != nil {
			return
		}
		for name, e := range h.Tensors {
			if e.Begin < h.DataOff || e.End > int64(len(file)) || e.Begin > e.End {
				t.Fatalf("tensor %s extent [%d, %d) outside data [%d, %d)", name, e.Begin, e.End, h.DataOff, len(file))
			}
			if sz, ok := dtypeSize[e.Dtype]; ok && sz*e.Elems != e.Length {
				t.Fatalf("tensor %s: %d elements of %d bytes in %d bytes", name, e.Elems, sz, e.Length)
			}
		}
		if err := checkOverlap(h.Tensors); err != nil {
			t.Fatal(err)
		}
	})
}

func TestF16(t *testing.T) {
	// Every half round-trips exactly through float32.
	for h := 0; h < 1<<16; h++ {
		f := core.F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if uint16(h)&0x7c00 != 0x7c00 || uint16(h)&0x3ff == 0 {
				t.Fatalf("%#04x widened to NaN", h)
			}
			continue
		}
		if back := core.F32ToF16(f); back != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, back)
		}
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00},
		{0.000060975552, 0x03ff},                  // largest subnormal
		{float32(math.Ldexp(1, -24)), 0x0001},     // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},     // tie between 0 and 2^-24: even (0)
		{float32(math.Ldexp(3, -25)), 0x0002},     // tie between 1 and 2 units: even (2)
		{1 + float32(math.Ldexp(1, -11)), 0x3c00}, // tie: round to even mantissa
		{1 + float32(math.Ldexp(3, -11)), 0x3c02},
		{float32(math.Inf(-1)), 0xfc00},
	} {
		if got := core.F32ToF16(c.f); got != c.h {
			t.Errorf("f32ToF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := core.F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN -> %#04x", h)
	}
}

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3f80}, {-1, 0xbf80}, {3.140625, 0x4049},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie: even
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie: even (up)
		{math.Float32frombits(0x3f808001), 0x3f81}, // above the tie
		{math.MaxFloat32, 0x7f80},                  // rounds to inf
	} {
		if got := core.F32ToBF16(c.f); got != c.h {
			t.Errorf("f32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := core.BF16ToF32(uint16(h))
		if !math.IsNaN(float64(f)) && core.F32ToBF16(f) != uint16(h) {
			t.Fatalf("%#04x does not round-trip", h)
		}
	}
}

// TestViews: aligned inputs are views (no copy), misaligned ones copies with
// the same values.
func TestViews(t *testing.T) {
	buf := make([]byte, 4*5+1)
	for i := 0; i < 5; i++ {
		binary.LittleEndian.PutUint32(buf[1+4*i:], math.Float32bits(float32(i)+0.5))
	}
	mis := core.F32View(buf[1:])
	// Bytes backed by a []float32 are 4-byte aligned (a plain []byte on the
	// stack need not be).
	al := unsafe.Slice((*byte)(unsafe.Pointer(&make([]float32, 5)[0])), 20)
	copy(al, buf[1:])
	view := core.F32View(al)
	for i := range 5 {
		if mis[i] != float32(i)+0.5 || view[i] != mis[i] {
			t.Fatalf("element %d: misaligned %v, aligned %v", i, mis[i], view[i])
		}
	}
	if core.LittleEndian {
		al[0] ^= 0xff // the aligned result must alias the bytes
		if view[0] == mis[0] {
			t.Errorf("aligned f32View copied instead of viewing: %#x %#x", math.Float32bits(view[0]), math.Float32bits(mis[0]))
		}
	}
}
