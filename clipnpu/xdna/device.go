package xdna

import (
	"fmt"
	"strings"
	"time"
)

// Options configures Open. The zero value opens the first amdxdna node with
// a 64 MiB heap and a 10 s per-command deadline.
type Options struct {
	Path     string        // device node; "" = the first /dev/accel/accel* driven by amdxdna
	HeapSize int           // device heap in bytes, a multiple of 64 MiB; 0 = 64 MiB
	Timeout  time.Duration // per command; 0 = 10 s
}

// HeapAlign is the alignment (and granule) of the device heap: the firmware
// rejects a heap whose host mapping is not 64 MiB aligned.
const HeapAlign = 64 << 20

// DefaultTimeout bounds one command.
const DefaultTimeout = 10 * time.Second

// Info describes the device as the driver reports it.
type Info struct {
	Node          string // e.g. /dev/accel/accel0
	Driver        string // DRM driver name, "amdxdna"
	DriverVersion string // DRM driver version major.minor.patch
	DriverDate    string
	Firmware      FirmwareVersion
	FirmwareKnown bool
	AIE           AIEMetadata
	AIEKnown      bool
	ContextsInUse int  // hardware contexts open on the whole machine
	ContextsKnown bool // whether the driver answered QUERY_HW_CONTEXTS
	ContextLimit  int  // 16 on NPU2 (Strix/Krackan), 6 on NPU1; an estimate from the column count
	MemlockLimit  uint64
	Notes         []string // queries that failed, and why
}

// FreeContexts returns the estimated free hardware contexts, or -1 when
// unknown.
func (i Info) FreeContexts() int {
	if !i.ContextsKnown || i.ContextLimit == 0 {
		return -1
	}
	return max(i.ContextLimit-i.ContextsInUse, 0)
}

// FirmwareString formats the firmware version.
func (i Info) FirmwareString() string {
	if !i.FirmwareKnown {
		return "unknown"
	}
	f := i.Firmware
	return fmt.Sprintf("%d.%d.%d.%d", f.Major, f.Minor, f.Patch, f.Build)
}

// AIEString summarises the AIE array.
func (i Info) AIEString() string {
	if !i.AIEKnown {
		return "unknown"
	}
	a := i.AIE
	return fmt.Sprintf("AIE %d.%d, %d columns x %d rows (core rows %d from %d, mem rows %d, shim rows %d), column size %d",
		a.VersionMajor, a.VersionMinor, a.Cols, a.Rows, a.Core.RowCount, a.Core.RowStart, a.Mem.RowCount, a.Shim.RowCount, a.ColSize)
}

// contextLimit estimates the machine-wide hardware context limit from the
// AIE column count: NPU1 (Phoenix/Hawk Point, 5 columns) allows 6, NPU2
// and later (Strix, Krackan, 8 columns) 16 (mlir-aie hostruntime.py).
func contextLimit(cols uint16) int {
	switch {
	case cols == 0:
		return 0
	case cols >= 8:
		return 16
	}
	return 6
}

// cString returns the NUL-terminated prefix of b.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// View is a byte range of a buffer: a sub-buffer as IRON kernels see it.
// Its device address is the parent's plus Off; the parent's handle is what
// EXEC_CMD pins.
type View struct {
	BO   *BO
	Off  int
	Size int
}

// Addr returns the device address of the view.
func (v View) Addr() uint64 { return v.BO.addr + uint64(v.Off) }

// Bytes returns the host mapping of the view.
func (v View) Bytes() []byte { return v.BO.host[v.Off : v.Off+v.Size : v.Off+v.Size] }

// BO is a buffer object: its handle, host mapping and device address.
type BO struct {
	dev    *Device
	handle uint32
	typ    BOType
	size   int
	host   []byte
	addr   uint64 // device address (xdna_addr, or the host VA)
	heapAt int    // offset inside the heap for DEV BOs, -1 otherwise
	mapped bool   // host was mmapped for this BO (not carved from the heap)
}

// Bytes returns the host mapping.
func (b *BO) Bytes() []byte { return b.host }

// Size returns the buffer size in bytes.
func (b *BO) Size() int { return b.size }

// Addr returns the buffer's device address.
func (b *BO) Addr() uint64 { return b.addr }

// Handle returns the GEM handle.
func (b *BO) Handle() uint32 { return b.handle }

// View returns bytes [off, off+size) of the buffer.
func (b *BO) View(off, size int) (View, error) {
	if off < 0 || size < 0 || off > b.size || size > b.size-off {
		return View{}, fmt.Errorf("xdna: view [%d,+%d) outside a %d-byte buffer", off, size, b.size)
	}
	return View{BO: b, Off: off, Size: size}, nil
}

// All returns a view of the whole buffer.
func (b *BO) All() View { return View{BO: b, Size: b.size} }
