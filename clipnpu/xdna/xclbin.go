package xdna

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The parts of an xclbin (XRT's "axlf" container, Xilinx/XRT
// include/xrt/detail/xclbin.h) that creating a hardware context needs.
const (
	axlfMagic          = "xclbin2\x00"
	axlfUUIDOff        = 416 // m_header.uuid[16]
	axlfNumSectionsOff = 448 // m_header.m_numSections u32
	axlfSectionsOff    = 456 // m_sections[], 40 bytes each
	axlfSectionSize    = 40  // kind u32, name[16], (pad), offset u64 @24, size u64 @32

	kindAIEPartition = 32

	partOpsPerCycleOff = 8   // operations_per_cycle u32
	partColumnWidthOff = 32  // info.column_width u16
	partPDICountOff    = 120 // aie_pdi.size (count) u32
	partPDIOffsetOff   = 124 // aie_pdi.offset u32, from the section start
	partMinSize        = 128

	pdiEntrySize   = 96 // uuid[16], pdi_image{size u32, offset u32}, cdo_groups, reserved
	pdiImageSizeAt = 16
	pdiImageOffAt  = 20
)

// ErrBadXclbin is returned when an xclbin is truncated or lacks what a
// hardware context needs (an AIE_PARTITION section with one PDI).
var ErrBadXclbin = errors.New("xdna: malformed xclbin")

// Xclbin is what clipidx reads from an xclbin: its UUID and its AIE
// partition (operations per cycle, column width, the PDI image).
type Xclbin struct {
	UUID         [16]byte
	OpsPerCycle  uint32
	ColumnWidth  uint16
	PDI          []byte   // the partition's (first) PDI image, a view into the input
	PDICount     int      // IRON xclbins have exactly one
	SectionKinds []uint32 // every section kind, in order (for diagnostics)
}

// ParseXclbin reads an xclbin image. It never panics on bad input; every
// offset is checked against the buffer.
func ParseXclbin(b []byte) (*Xclbin, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadXclbin, fmt.Sprintf(format, a...))
	}
	if len(b) < axlfSectionsOff || string(b[:8]) != axlfMagic {
		return nil, bad("no xclbin2 header (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	x := &Xclbin{}
	copy(x.UUID[:], b[axlfUUIDOff:axlfUUIDOff+16])
	n := uint64(le.Uint32(b[axlfNumSectionsOff:]))
	if n > uint64(len(b)-axlfSectionsOff)/axlfSectionSize {
		return nil, bad("%d sections do not fit in %d bytes", n, len(b))
	}
	var part []byte
	for i := uint64(0); i < n; i++ {
		h := b[axlfSectionsOff+i*axlfSectionSize:]
		kind := le.Uint32(h)
		off, size := le.Uint64(h[24:]), le.Uint64(h[32:])
		x.SectionKinds = append(x.SectionKinds, kind)
		if off > uint64(len(b)) || size > uint64(len(b))-off {
			return nil, bad("section %d (kind %d) [%d,+%d) runs past the end (%d bytes)", i, kind, off, size, len(b))
		}
		if kind == kindAIEPartition && part == nil {
			part = b[off : off+size]
		}
	}
	if part == nil {
		return nil, bad("no AIE_PARTITION section (kinds %v); is this an NPU xclbin?", x.SectionKinds)
	}
	if len(part) < partMinSize {
		return nil, bad("AIE_PARTITION section of %d bytes is truncated", len(part))
	}
	x.OpsPerCycle = le.Uint32(part[partOpsPerCycleOff:])
	x.ColumnWidth = le.Uint16(part[partColumnWidthOff:])
	count := uint64(le.Uint32(part[partPDICountOff:]))
	poff := uint64(le.Uint32(part[partPDIOffsetOff:]))
	if count == 0 {
		return nil, bad("AIE_PARTITION has no PDI")
	}
	if poff > uint64(len(part)) || count > (uint64(len(part))-poff)/pdiEntrySize {
		return nil, bad("AIE_PARTITION PDI table (%d entries at %d) runs past the section (%d bytes)", count, poff, len(part))
	}
	x.PDICount = int(count)
	e := part[poff:]
	isize, ioff := uint64(le.Uint32(e[pdiImageSizeAt:])), uint64(le.Uint32(e[pdiImageOffAt:]))
	if isize == 0 || ioff > uint64(len(part)) || isize > uint64(len(part))-ioff {
		return nil, bad("PDI image [%d,+%d) runs past the AIE_PARTITION section (%d bytes)", ioff, isize, len(part))
	}
	x.PDI = part[ioff : ioff+isize : ioff+isize]
	if x.ColumnWidth == 0 {
		return nil, bad("AIE_PARTITION column width is 0")
	}
	return x, nil
}

// BuildXclbin writes a minimal xclbin with one AIE_PARTITION section holding
// pdi: the inverse of ParseXclbin, for tests and the emulated device.
func BuildXclbin(uuid [16]byte, opsPerCycle uint32, columns uint16, pdi []byte) []byte {
	le := binary.LittleEndian
	partOff := uint64(axlfSectionsOff + axlfSectionSize)
	part := make([]byte, partMinSize+pdiEntrySize+len(pdi))
	le.PutUint32(part[partOpsPerCycleOff:], opsPerCycle)
	le.PutUint16(part[partColumnWidthOff:], columns)
	le.PutUint32(part[partPDICountOff:], 1)
	le.PutUint32(part[partPDIOffsetOff:], partMinSize)
	copy(part[partMinSize:], uuid[:])
	le.PutUint32(part[partMinSize+pdiImageSizeAt:], uint32(len(pdi)))
	le.PutUint32(part[partMinSize+pdiImageOffAt:], partMinSize+pdiEntrySize)
	copy(part[partMinSize+pdiEntrySize:], pdi)

	b := make([]byte, partOff, partOff+uint64(len(part)))
	copy(b, axlfMagic)
	copy(b[axlfUUIDOff:], uuid[:])
	le.PutUint64(b[304:], partOff+uint64(len(part))) // m_header.m_length
	le.PutUint32(b[axlfNumSectionsOff:], 1)
	h := b[axlfSectionsOff:]
	le.PutUint32(h, kindAIEPartition)
	copy(h[4:20], "AIE_PARTITION")
	le.PutUint64(h[24:], partOff)
	le.PutUint64(h[32:], uint64(len(part)))
	return append(b, part...)
}
