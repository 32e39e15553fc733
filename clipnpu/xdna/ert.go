package xdna

import "fmt"

// ERT command header fields (XRT include/xrt/detail/ert.h; the driver's
// amdxdna_ctx.h): state [3:0], custom [11:4], count [22:12] (payload
// words), opcode [27:23], type [31:28].
const (
	ertStartCU = 0 // opcode: start a CU with a register map payload
	ertTypeCU  = 3 // type ERT_CU
)

// Command states written into header bits [3:0].
const (
	StateNew        = 1
	StateQueued     = 2
	StateRunning    = 3
	StateCompleted  = 4
	StateError      = 5
	StateAbort      = 6
	StateSubmitted  = 7
	StateTimeout    = 8
	StateNoResponse = 9
)

// stateName names a command state for errors.
func stateName(s uint32) string {
	names := map[uint32]string{
		StateNew: "new", StateQueued: "queued", StateRunning: "running",
		StateCompleted: "completed", StateError: "error", StateAbort: "abort",
		StateSubmitted: "submitted", StateTimeout: "timeout", StateNoResponse: "no response",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("state %d", s)
}

// PacketWords is the length of an ERT_START_CU packet for an IRON kernel:
// header, CU mask, then the MLIR_AIE register map (opcode u64, instr u64,
// ninstr u32, bo0..bo4 u64).
const PacketWords = 17

// MaxBuffers is how many buffer arguments an IRON kernel takes (bo0..bo4).
const MaxBuffers = 5

// txnOpcode is the MLIR_AIE kernel's opcode argument for the xclbin +
// insts.bin transaction flow (IRON passes 3; 2 is the deprecated legacy
// flow).
const txnOpcode = 3

// header builds an ERT header word.
func header(state, count, opcode, typ uint32) uint32 {
	return state&0xF | (count&0x7FF)<<12 | (opcode&0x1F)<<23 | (typ&0xF)<<28
}

// headerState returns bits [3:0] of a header word.
func headerState(w uint32) uint32 { return w & 0xF }

// StartCUPacket builds the 17-word ERT_START_CU packet for one run of an
// IRON kernel: CU 0 (the PDI bound by CONFIG_CU), opcode 3, the
// instruction stream's device address and its size in bytes (as IRON and
// taconite pass it), then up to five buffer device addresses (the rest 0).
func StartCUPacket(instrAddr uint64, instrBytes uint32, bufs []uint64) ([PacketWords]uint32, error) {
	var p [PacketWords]uint32
	if len(bufs) > MaxBuffers {
		return p, fmt.Errorf("xdna: %d buffer arguments, an IRON kernel takes at most %d", len(bufs), MaxBuffers)
	}
	if instrBytes == 0 || instrBytes%4 != 0 {
		return p, fmt.Errorf("xdna: instruction stream of %d bytes (want a non-zero multiple of 4)", instrBytes)
	}
	p[0] = header(StateNew, PacketWords-1, ertStartCU, ertTypeCU)
	p[1] = 1 // CU mask: CU 0
	put64 := func(i int, v uint64) { p[i], p[i+1] = uint32(v), uint32(v>>32) }
	put64(2, txnOpcode)
	put64(4, instrAddr)
	p[6] = instrBytes
	for i, a := range bufs {
		put64(7+2*i, a)
	}
	return p, nil
}
