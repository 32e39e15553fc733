// Package xdna drives the AMD XDNA NPU through the amdxdna kernel driver's
// ioctls (Linux 6.14+ drivers/accel/amdxdna, or amd/xdna-driver), without
// XRT and without cgo: open /dev/accel/accel*, query the AIE metadata and
// firmware, map a 64 MiB-aligned device heap, create one hardware context per
// xclbin from its AIE_PARTITION PDI, allocate buffers, submit 17-word
// ERT_START_CU packets with EXEC_CMD and wait on the context's timeline
// syncobj with an absolute deadline.
//
// The encoders in this file (struct layouts, request numbers, the command
// packet, the xclbin reader) are platform independent so that they are
// tested everywhere; the system calls live in device_linux.go. None of this
// has run on an NPU: see clipnpu/NPU.md for what only hardware can confirm.
package xdna

import "encoding/binary"

// ioctl direction bits (Linux asm-generic/ioctl.h).
const (
	iocWrite = 1
	iocRead  = 2
)

// ioc builds an ioctl request number: dir<<30 | size<<16 | type<<8 | nr.
func ioc(dir, typ, nr, size uintptr) uintptr {
	return dir<<30 | size<<16 | typ<<8 | nr
}

// iowr is DRM_IOWR(nr, size) with DRM's ioctl type 'd'.
func iowr(nr, size uintptr) uintptr { return ioc(iocRead|iocWrite, 'd', nr, size) }

// iow is DRM_IOW(nr, size).
func iow(nr, size uintptr) uintptr { return ioc(iocWrite, 'd', nr, size) }

// drmCommandBase is where driver-private DRM ioctls start.
const drmCommandBase = 0x40

// amdxdna ioctl ids (include/uapi/drm/amdxdna_accel.h, enum
// amdxdna_drm_ioctl_id), added to drmCommandBase.
const (
	idCreateHwctx  = 0
	idDestroyHwctx = 1
	idConfigHwctx  = 2
	idCreateBO     = 3
	idGetBOInfo    = 4
	idSyncBO       = 5
	idExecCmd      = 6
	idGetInfo      = 7
	idSetState     = 8
	idWaitCmd      = 9 // out-of-tree driver only
)

// Request numbers. Sizes are the struct sizes pinned by uapi_test.go.
var (
	ioctlCreateHwctx  = iowr(drmCommandBase+idCreateHwctx, sizeofCreateHwctx)
	ioctlDestroyHwctx = iowr(drmCommandBase+idDestroyHwctx, sizeofDestroyHwctx)
	ioctlConfigHwctx  = iowr(drmCommandBase+idConfigHwctx, sizeofConfigHwctx)
	ioctlCreateBO     = iowr(drmCommandBase+idCreateBO, sizeofCreateBO)
	ioctlGetBOInfo    = iowr(drmCommandBase+idGetBOInfo, sizeofGetBOInfo)
	ioctlSyncBO       = iowr(drmCommandBase+idSyncBO, sizeofSyncBO)
	ioctlExecCmd      = iowr(drmCommandBase+idExecCmd, sizeofExecCmd)
	ioctlGetInfo      = iowr(drmCommandBase+idGetInfo, sizeofGetInfo)
	ioctlSetState     = iowr(drmCommandBase+idSetState, sizeofGetInfo)

	// DRM core ioctls (include/uapi/drm/drm.h).
	ioctlVersion      = iowr(0x00, sizeofDrmVersion)
	ioctlGemClose     = iow(0x09, sizeofGemClose)
	ioctlTimelineWait = iowr(0xCA, sizeofTimelineWait)
)

// Struct sizes in bytes.
const (
	sizeofCreateHwctx  = 56
	sizeofDestroyHwctx = 8
	sizeofConfigHwctx  = 24
	sizeofCreateBO     = 32
	sizeofGetBOInfo    = 48
	sizeofSyncBO       = 24
	sizeofExecCmd      = 56
	sizeofGetInfo      = 16
	sizeofGemClose     = 8
	sizeofTimelineWait = 48
	sizeofDrmVersion   = 64
	sizeofQos          = 32 // out-of-tree size; upstream reads the first 24
	sizeofAIEMetadata  = 64
	sizeofFirmware     = 16
	sizeofQueryHwctx   = 64
)

// createHwctx is struct amdxdna_drm_create_hwctx.
type createHwctx struct {
	Ext           uint64
	ExtFlags      uint64
	QosP          uint64 // address of a qos block
	UmqBO         uint32
	LogBufBO      uint32
	MaxOpc        uint32
	NumTiles      uint32
	MemSize       uint32
	UmqDoorbell   uint32 // out
	Handle        uint32 // out
	SyncobjHandle uint32 // out
}

// qosInfo is struct amdxdna_qos_info with the out-of-tree tail (upstream
// copies the first 24 bytes, the out-of-tree driver all 32).
type qosInfo struct {
	Gops          uint32
	Fps           uint32
	DMABandwidth  uint32
	Latency       uint32
	FrameExecTime uint32
	Priority      uint32
	UserStartCol  uint32
	Reserved      uint32
}

// userStartColNotRequested lets the driver place the partition.
const userStartColNotRequested = 0xFF

// destroyHwctx is struct amdxdna_drm_destroy_hwctx.
type destroyHwctx struct {
	Handle uint32
	Pad    uint32
}

// configHwctx is struct amdxdna_drm_config_hwctx.
type configHwctx struct {
	Handle       uint32
	ParamType    uint32
	ParamVal     uint64 // address of the payload
	ParamValSize uint32
	Pad          uint32
}

// configCUParam is DRM_AMDXDNA_HWCTX_CONFIG_CU.
const configCUParam = 0

// createBO is struct amdxdna_drm_create_bo.
type createBO struct {
	Flags  uint64
	Vaddr  uint64
	Size   uint64
	Type   uint32
	Handle uint32 // out
}

// BOType is an amdxdna buffer-object type.
type BOType uint32

// Buffer-object types (enum amdxdna_bo_type).
const (
	BOShare   BOType = 1 // shmem pages the NPU reaches by address
	BODevHeap BOType = 2 // the device heap DEV BOs are carved from
	BODev     BOType = 3 // carved from the heap (PDIs, instruction streams)
	BOCmd     BOType = 4 // command packets
)

func (t BOType) String() string {
	switch t {
	case BOShare:
		return "share"
	case BODevHeap:
		return "dev-heap"
	case BODev:
		return "dev"
	case BOCmd:
		return "cmd"
	}
	return "bo-type?"
}

// getBOInfo is struct amdxdna_drm_get_bo_info.
type getBOInfo struct {
	Ext       uint64
	ExtFlags  uint64
	Handle    uint32
	Pad       uint32
	MapOffset uint64 // out
	Vaddr     uint64 // out
	XdnaAddr  uint64 // out
}

// invalidAddr is AMDXDNA_INVALID_ADDR (~0).
const invalidAddr = ^uint64(0)

// syncBO is struct amdxdna_drm_sync_bo.
type syncBO struct {
	Handle    uint32
	Direction uint32
	Offset    uint64
	Size      uint64
}

// Sync directions.
const (
	syncToDevice   = 0
	syncFromDevice = 1
)

// execCmd is struct amdxdna_drm_exec_cmd.
type execCmd struct {
	Ext        uint64
	ExtFlags   uint64
	Hwctx      uint32
	Type       uint32 // 0 = AMDXDNA_CMD_SUBMIT_EXEC_BUF
	CmdHandles uint64 // the command BO handle itself when CmdCount == 1
	Args       uint64 // address of a u32 array of BO handles
	CmdCount   uint32
	ArgCount   uint32
	Seq        uint64 // out
}

// maxArgCount is the driver's limit on EXEC_CMD argument handles.
const maxArgCount = 4095

// getInfo is struct amdxdna_drm_get_info (and amdxdna_drm_set_state).
type getInfo struct {
	Param      uint32
	BufferSize uint32
	Buffer     uint64
}

// GET_INFO params (enum amdxdna_drm_get_param).
const (
	queryAIEMetadata    = 1
	queryAIEVersion     = 2
	queryHwContexts     = 5
	queryFirmware       = 8
	queryPowerMode      = 9
	queryResourceInfoOT = 12 // out-of-tree only
)

// gemClose is struct drm_gem_close.
type gemClose struct {
	Handle uint32
	Pad    uint32
}

// timelineWait is struct drm_syncobj_timeline_wait.
type timelineWait struct {
	Handles       uint64 // address of u32[count]
	Points        uint64 // address of u64[count]
	TimeoutNsec   int64  // ABSOLUTE CLOCK_MONOTONIC deadline
	CountHandles  uint32
	Flags         uint32
	FirstSignaled uint32 // out
	Pad           uint32
	DeadlineNsec  uint64
}

// drmVersion is struct drm_version on a 64-bit system.
type drmVersion struct {
	Major, Minor, Patch int32
	_                   int32
	NameLen             uint64
	Name                uint64
	DateLen             uint64
	Date                uint64
	DescLen             uint64
	Desc                uint64
}

// TileMetadata is struct amdxdna_drm_query_aie_tile_metadata.
type TileMetadata struct {
	RowCount        uint16
	RowStart        uint16
	DMAChannelCount uint16
	LockCount       uint16
	EventRegCount   uint16
	Pad             [3]uint16
}

// AIEMetadata is struct amdxdna_drm_query_aie_metadata.
type AIEMetadata struct {
	ColSize      uint32
	Cols         uint16
	Rows         uint16
	VersionMajor uint32
	VersionMinor uint32
	Core         TileMetadata
	Mem          TileMetadata
	Shim         TileMetadata
}

// FirmwareVersion is struct amdxdna_drm_query_firmware_version.
type FirmwareVersion struct {
	Major, Minor, Patch, Build uint32
}

// queryHwctx is struct amdxdna_drm_query_hwctx (one entry of the
// QUERY_HW_CONTEXTS answer).
type queryHwctx struct {
	ContextID          uint32
	StartCol           uint32
	NumCol             uint32
	Pad                uint32
	Pid                int64
	CommandSubmissions uint64
	CommandCompletions uint64
	Migrations         uint64
	Preemptions        uint64
	Errors             uint64
}

// decodeAIEMetadata reads struct amdxdna_drm_query_aie_metadata from the
// driver's little-endian bytes (len(b) >= 64).
func decodeAIEMetadata(b []byte) AIEMetadata {
	le := binary.LittleEndian
	tile := func(o int) TileMetadata {
		return TileMetadata{
			RowCount: le.Uint16(b[o:]), RowStart: le.Uint16(b[o+2:]), DMAChannelCount: le.Uint16(b[o+4:]),
			LockCount: le.Uint16(b[o+6:]), EventRegCount: le.Uint16(b[o+8:]),
		}
	}
	return AIEMetadata{
		ColSize: le.Uint32(b[0:]), Cols: le.Uint16(b[4:]), Rows: le.Uint16(b[6:]),
		VersionMajor: le.Uint32(b[8:]), VersionMinor: le.Uint32(b[12:]),
		Core: tile(16), Mem: tile(32), Shim: tile(48),
	}
}
