package xdna

import (
	"encoding/binary"
	"reflect"
	"testing"
	"unsafe"
)

// TestRequestNumbers checks every request number computed from
// _IOWR('d', DRM_COMMAND_BASE + n, size) against the values written down in
// the research notes (npu-notes.md section 3.2) and in taconite's tests.
func TestRequestNumbers(t *testing.T) {
	cases := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"CREATE_HWCTX", ioctlCreateHwctx, 0xC0386440},
		{"DESTROY_HWCTX", ioctlDestroyHwctx, 0xC0086441},
		{"CONFIG_HWCTX", ioctlConfigHwctx, 0xC0186442},
		{"CREATE_BO", ioctlCreateBO, 0xC0206443},
		{"GET_BO_INFO", ioctlGetBOInfo, 0xC0306444},
		{"SYNC_BO", ioctlSyncBO, 0xC0186445},
		{"EXEC_CMD", ioctlExecCmd, 0xC0386446},
		{"GET_INFO", ioctlGetInfo, 0xC0106447},
		{"SET_STATE", ioctlSetState, 0xC0106448},
		{"WAIT_CMD", iowr(drmCommandBase+idWaitCmd, 16), 0xC0106449},
		{"GEM_CLOSE", ioctlGemClose, 0x40086409},
		{"SYNCOBJ_TIMELINE_WAIT", ioctlTimelineWait, 0xC03064CA},
		{"SYNCOBJ_TIMELINE_WAIT (pre-deadline)", iowr(0xCA, 40), 0xC02864CA},
		{"VERSION", ioctlVersion, 0xC0406400},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// field is one expected (name, offset) pair of a struct.
type field struct {
	name string
	off  uintptr
}

// checkLayout compares a struct's size and field offsets (by reflection,
// which reports what unsafe.Offsetof does) with the uAPI header's.
func checkLayout(t *testing.T, v any, size uintptr, fields []field) {
	t.Helper()
	typ := reflect.TypeOf(v)
	if typ.Size() != size {
		t.Errorf("%s: size %d, want %d", typ.Name(), typ.Size(), size)
	}
	for _, f := range fields {
		sf, ok := typ.FieldByName(f.name)
		if !ok {
			t.Errorf("%s has no field %s", typ.Name(), f.name)
			continue
		}
		if sf.Offset != f.off {
			t.Errorf("%s.%s at %d, want %d", typ.Name(), f.name, sf.Offset, f.off)
		}
	}
}

func TestStructLayouts(t *testing.T) {
	checkLayout(t, createHwctx{}, 56, []field{{"Ext", 0}, {"ExtFlags", 8}, {"QosP", 16}, {"UmqBO", 24}, {"LogBufBO", 28},
		{"MaxOpc", 32}, {"NumTiles", 36}, {"MemSize", 40}, {"UmqDoorbell", 44}, {"Handle", 48}, {"SyncobjHandle", 52}})
	checkLayout(t, qosInfo{}, 32, []field{{"Gops", 0}, {"Fps", 4}, {"DMABandwidth", 8}, {"Latency", 12},
		{"FrameExecTime", 16}, {"Priority", 20}, {"UserStartCol", 24}, {"Reserved", 28}})
	checkLayout(t, destroyHwctx{}, 8, []field{{"Handle", 0}, {"Pad", 4}})
	checkLayout(t, configHwctx{}, 24, []field{{"Handle", 0}, {"ParamType", 4}, {"ParamVal", 8}, {"ParamValSize", 16}, {"Pad", 20}})
	checkLayout(t, createBO{}, 32, []field{{"Flags", 0}, {"Vaddr", 8}, {"Size", 16}, {"Type", 24}, {"Handle", 28}})
	checkLayout(t, getBOInfo{}, 48, []field{{"Ext", 0}, {"ExtFlags", 8}, {"Handle", 16}, {"Pad", 20},
		{"MapOffset", 24}, {"Vaddr", 32}, {"XdnaAddr", 40}})
	checkLayout(t, syncBO{}, 24, []field{{"Handle", 0}, {"Direction", 4}, {"Offset", 8}, {"Size", 16}})
	checkLayout(t, execCmd{}, 56, []field{{"Ext", 0}, {"ExtFlags", 8}, {"Hwctx", 16}, {"Type", 20}, {"CmdHandles", 24},
		{"Args", 32}, {"CmdCount", 40}, {"ArgCount", 44}, {"Seq", 48}})
	checkLayout(t, getInfo{}, 16, []field{{"Param", 0}, {"BufferSize", 4}, {"Buffer", 8}})
	checkLayout(t, gemClose{}, 8, []field{{"Handle", 0}, {"Pad", 4}})
	checkLayout(t, timelineWait{}, 48, []field{{"Handles", 0}, {"Points", 8}, {"TimeoutNsec", 16}, {"CountHandles", 24},
		{"Flags", 28}, {"FirstSignaled", 32}, {"Pad", 36}, {"DeadlineNsec", 40}})
	checkLayout(t, drmVersion{}, 64, []field{{"Major", 0}, {"Minor", 4}, {"Patch", 8}, {"NameLen", 16}, {"Name", 24},
		{"DateLen", 32}, {"Date", 40}, {"DescLen", 48}, {"Desc", 56}})
	checkLayout(t, TileMetadata{}, 16, []field{{"RowCount", 0}, {"RowStart", 2}, {"DMAChannelCount", 4}, {"LockCount", 6}, {"EventRegCount", 8}})
	checkLayout(t, AIEMetadata{}, 64, []field{{"ColSize", 0}, {"Cols", 4}, {"Rows", 6}, {"VersionMajor", 8}, {"VersionMinor", 12},
		{"Core", 16}, {"Mem", 32}, {"Shim", 48}})
	checkLayout(t, FirmwareVersion{}, 16, []field{{"Major", 0}, {"Minor", 4}, {"Patch", 8}, {"Build", 12}})
	checkLayout(t, queryHwctx{}, 64, []field{{"ContextID", 0}, {"StartCol", 4}, {"NumCol", 8}, {"Pid", 16},
		{"CommandSubmissions", 24}, {"CommandCompletions", 32}, {"Migrations", 40}, {"Preemptions", 48}, {"Errors", 56}})

	// The size constants the request numbers use agree with the structs.
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"create_hwctx", unsafe.Sizeof(createHwctx{}), sizeofCreateHwctx},
		{"destroy_hwctx", unsafe.Sizeof(destroyHwctx{}), sizeofDestroyHwctx},
		{"config_hwctx", unsafe.Sizeof(configHwctx{}), sizeofConfigHwctx},
		{"create_bo", unsafe.Sizeof(createBO{}), sizeofCreateBO},
		{"get_bo_info", unsafe.Sizeof(getBOInfo{}), sizeofGetBOInfo},
		{"sync_bo", unsafe.Sizeof(syncBO{}), sizeofSyncBO},
		{"exec_cmd", unsafe.Sizeof(execCmd{}), sizeofExecCmd},
		{"get_info", unsafe.Sizeof(getInfo{}), sizeofGetInfo},
		{"gem_close", unsafe.Sizeof(gemClose{}), sizeofGemClose},
		{"timeline_wait", unsafe.Sizeof(timelineWait{}), sizeofTimelineWait},
		{"drm_version", unsafe.Sizeof(drmVersion{}), sizeofDrmVersion},
		{"qos", unsafe.Sizeof(qosInfo{}), sizeofQos},
		{"aie_metadata", unsafe.Sizeof(AIEMetadata{}), sizeofAIEMetadata},
		{"firmware", unsafe.Sizeof(FirmwareVersion{}), sizeofFirmware},
		{"query_hwctx", unsafe.Sizeof(queryHwctx{}), sizeofQueryHwctx},
	} {
		if c.got != c.want {
			t.Errorf("sizeof %s = %d, constant %d", c.name, c.got, c.want)
		}
	}
}

func TestDecodeAIEMetadata(t *testing.T) {
	// Encode a metadata block by writing the struct's own memory, then
	// decode the bytes: both paths must agree field for field.
	want := AIEMetadata{ColSize: 0x100000, Cols: 8, Rows: 6, VersionMajor: 2, VersionMinor: 1,
		Core: TileMetadata{RowCount: 4, RowStart: 2, DMAChannelCount: 2, LockCount: 16, EventRegCount: 128},
		Mem:  TileMetadata{RowCount: 1, RowStart: 1, DMAChannelCount: 6, LockCount: 64, EventRegCount: 192},
		Shim: TileMetadata{RowCount: 1, RowStart: 0, DMAChannelCount: 2, LockCount: 16, EventRegCount: 128}}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&want)), unsafe.Sizeof(want))
	if binary.LittleEndian.Uint16(raw[4:]) != 8 {
		t.Skip("big-endian host")
	}
	if got := decodeAIEMetadata(raw); got != want {
		t.Errorf("decode = %+v\nwant     %+v", got, want)
	}
	info := Info{AIE: want, AIEKnown: true, ContextLimit: contextLimit(want.Cols), ContextsInUse: 3, ContextsKnown: true}
	if info.FreeContexts() != 13 {
		t.Errorf("free contexts = %d, want 13", info.FreeContexts())
	}
	if contextLimit(5) != 6 || contextLimit(0) != 0 {
		t.Error("context limit estimate")
	}
}

func TestStartCUPacket(t *testing.T) {
	bufs := []uint64{0x1_0000_1000, 0x2_0000_2000, 0x7fff_ffff_f000}
	p, err := StartCUPacket(0x0400_0040, 4096, bufs)
	if err != nil {
		t.Fatal(err)
	}
	// The words as the notes (section 3.4) lay them out.
	want := [PacketWords]uint32{
		0x30010001, // NEW, 16 payload words, START_CU, ERT_CU
		1,          // CU mask
		3, 0,       // opcode u64
		0x0400_0040, 0, // instr
		4096,             // ninstr in bytes
		0x0000_1000, 0x1, // bo0
		0x0000_2000, 0x2, // bo1
		0xffff_f000, 0x7fff, // bo2
		0, 0, 0, 0, // bo3, bo4 unused
	}
	if p != want {
		t.Errorf("packet\n got %#x\nwant %#x", p, want)
	}
	if header(StateNew, 16, ertStartCU, ertTypeCU) != 0x30010001 {
		t.Error("header")
	}
	if headerState(0x30010004) != StateCompleted || stateName(StateError) != "error" || stateName(42) != "state 42" {
		t.Error("state decode")
	}
	if _, err := StartCUPacket(0, 4096, make([]uint64, 6)); err == nil {
		t.Error("six buffers accepted")
	}
	if _, err := StartCUPacket(0, 6, nil); err == nil {
		t.Error("6-byte instruction stream accepted")
	}
}

func TestXclbin(t *testing.T) {
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	pdi := []byte("PDI-image-bytes!")
	b := BuildXclbin(uuid, 2048, 4, pdi)
	x, err := ParseXclbin(b)
	if err != nil {
		t.Fatal(err)
	}
	if x.UUID != uuid || x.OpsPerCycle != 2048 || x.ColumnWidth != 4 || string(x.PDI) != string(pdi) || x.PDICount != 1 {
		t.Errorf("parsed %+v", x)
	}
	// Every truncation fails cleanly.
	for n := 0; n < len(b); n++ {
		if _, err := ParseXclbin(b[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	bad := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(bad[axlfSectionsOff:], 7) // kind: not AIE_PARTITION
	if _, err := ParseXclbin(bad); err == nil {
		t.Error("xclbin without AIE_PARTITION accepted")
	}
	bad = append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(bad[axlfNumSectionsOff:], 1<<30)
	if _, err := ParseXclbin(bad); err == nil {
		t.Error("huge section count accepted")
	}
}

func FuzzXclbin(f *testing.F) {
	f.Add(BuildXclbin([16]byte{1}, 2048, 4, []byte("pdi")))
	f.Add([]byte("xclbin2\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseXclbin(b)
		if err != nil {
			return
		}
		if len(x.PDI) == 0 || len(x.PDI) > len(b) || x.ColumnWidth == 0 {
			t.Fatalf("accepted %+v", x)
		}
	})
}
