//go:build linux

package xdna

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device is an open amdxdna device with its heap, contexts and buffers.
// Methods are safe for use by one goroutine at a time; Close tears down
// everything the device created.
type Device struct {
	mu       sync.Mutex
	fd       int
	info     Info
	timeout  time.Duration
	heap     *BO
	heapBase unsafe.Pointer // the aligned host mapping of the heap
	heapSize int
	bos      []*BO
	ctxs     []*Context
	closed   bool
}

// ioctl issues one request, retrying on EINTR as libdrm does, and on
// EAGAIN a few times only (a driver that keeps answering EAGAIN, say for
// want of a context, must not spin forever).
func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	again := 0
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN && again < 3:
			again++
			time.Sleep(time.Millisecond)
			continue
		case e != 0:
			return e
		}
		return nil
	}
}

// nodes returns the /dev/accel/accel* nodes in numeric order.
func nodes() []string {
	m, _ := filepath.Glob("/dev/accel/accel*")
	sort.Slice(m, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(m[i])[5:])
		b, _ := strconv.Atoi(filepath.Base(m[j])[5:])
		return a < b
	})
	return m
}

// driverName asks the DRM core which driver serves fd.
func driverName(fd int) (name, version, date string, err error) {
	nameBuf := make([]byte, 64)
	dateBuf := make([]byte, 64)
	v := drmVersion{
		NameLen: uint64(len(nameBuf)), Name: uint64(uintptr(unsafe.Pointer(&nameBuf[0]))),
		DateLen: uint64(len(dateBuf)), Date: uint64(uintptr(unsafe.Pointer(&dateBuf[0]))),
	}
	err = ioctl(fd, ioctlVersion, unsafe.Pointer(&v))
	runtime.KeepAlive(nameBuf)
	runtime.KeepAlive(dateBuf)
	if err != nil {
		return "", "", "", err
	}
	name = cString(nameBuf[:min(int(v.NameLen), len(nameBuf))])
	date = cString(dateBuf[:min(int(v.DateLen), len(dateBuf))])
	return name, fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch), date, nil
}

// openNode opens the node (or finds one) and checks it is amdxdna.
func openNode(path string) (int, Info, error) {
	cands := []string{path}
	if path == "" {
		cands = nodes()
		if len(cands) == 0 {
			_, err := os.Stat("/sys/module/amdxdna")
			return -1, Info{}, noDeviceError("/dev/accel/accel0", err == nil, nil)
		}
	}
	var others []string
	var permErr error
	for _, p := range cands {
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			switch {
			case errors.Is(err, unix.ENOENT):
				if path != "" {
					_, merr := os.Stat("/sys/module/amdxdna")
					return -1, Info{}, noDeviceError(p, merr == nil, nil)
				}
			case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
				if permErr == nil {
					permErr = permissionError(p, nodeGroup(p))
				}
			default:
				if permErr == nil {
					permErr = fmt.Errorf("%w: open %s: %v", ErrNoDevice, p, err)
				}
			}
			continue
		}
		name, ver, date, err := driverName(fd)
		if err == nil && name == "amdxdna" {
			return fd, Info{Node: p, Driver: name, DriverVersion: ver, DriverDate: date}, nil
		}
		unix.Close(fd)
		others = append(others, fmt.Sprintf("%s (%s)", p, orDefault(name, "unknown driver")))
	}
	if permErr != nil {
		return -1, Info{}, permErr
	}
	return -1, Info{}, noDeviceError("/dev/accel/accel0", false, others)
}

// nodeGroup names the group owning a node ("" if unknown).
func nodeGroup(p string) string {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil {
		return ""
	}
	g, err := user.LookupGroupId(strconv.Itoa(int(st.Gid)))
	if err != nil {
		return ""
	}
	return g.Name
}

// query fills info with everything GET_INFO answers; failures become notes.
func query(fd int, info *Info) {
	var meta [sizeofAIEMetadata]byte
	if err := getInfoRaw(fd, queryAIEMetadata, meta[:]); err != nil {
		info.Notes = append(info.Notes, fmt.Sprintf("AIE metadata query failed: %v", err))
	} else {
		info.AIE = decodeAIEMetadata(meta[:])
		info.AIEKnown = true
		info.ContextLimit = contextLimit(info.AIE.Cols)
	}
	var fw [sizeofFirmware]byte
	if err := getInfoRaw(fd, queryFirmware, fw[:]); err != nil {
		info.Notes = append(info.Notes, fmt.Sprintf("firmware version query failed: %v", err))
	} else {
		le := binary.LittleEndian
		info.Firmware = FirmwareVersion{le.Uint32(fw[0:]), le.Uint32(fw[4:]), le.Uint32(fw[8:]), le.Uint32(fw[12:])}
		info.FirmwareKnown = true
	}
	// Every context on the machine, 64 bytes each; 64 entries is more than
	// any NPU allows.
	buf := make([]byte, 64*sizeofQueryHwctx)
	if n, err := getInfoN(fd, queryHwContexts, buf); err != nil {
		info.Notes = append(info.Notes, fmt.Sprintf("hardware context query failed: %v", err))
	} else {
		info.ContextsInUse, info.ContextsKnown = n/sizeofQueryHwctx, true
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil {
		info.MemlockLimit = rl.Cur
		if rl.Cur == unix.RLIM_INFINITY {
			info.MemlockLimit = ^uint64(0)
		}
	}
}

func getInfoRaw(fd int, param uint32, buf []byte) error {
	n, err := getInfoN(fd, param, buf)
	if err == nil && n < len(buf) {
		return fmt.Errorf("driver answered %d bytes, want %d", n, len(buf))
	}
	return err
}

func getInfoN(fd int, param uint32, buf []byte) (int, error) {
	gi := getInfo{Param: param, BufferSize: uint32(len(buf)), Buffer: uint64(uintptr(unsafe.Pointer(&buf[0])))}
	err := ioctl(fd, ioctlGetInfo, unsafe.Pointer(&gi))
	runtime.KeepAlive(buf)
	if err != nil {
		return 0, err
	}
	return min(int(gi.BufferSize), len(buf)), nil
}

// Probe opens the device, reads what the driver reports and closes it
// again, without allocating anything: for `clipidx info`.
func Probe(path string) (Info, error) {
	fd, info, err := openNode(path)
	if err != nil {
		return Info{}, err
	}
	defer unix.Close(fd)
	query(fd, &info)
	return info, nil
}

// Open opens the device and maps its heap.
func Open(opts Options) (*Device, error) {
	fd, info, err := openNode(opts.Path)
	if err != nil {
		return nil, err
	}
	query(fd, &info)
	if !info.AIEKnown {
		unix.Close(fd)
		return nil, tooOldError("GET_INFO(AIE_METADATA)", errors.New(info.Notes[0]))
	}
	d := &Device{fd: fd, info: info, timeout: opts.Timeout}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	size := opts.HeapSize
	if size <= 0 {
		size = HeapAlign
	}
	size = (size + HeapAlign - 1) / HeapAlign * HeapAlign
	if err := d.mapHeap(size); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Info returns what the driver reported at Open.
func (d *Device) Info() Info { return d.info }

// createBO issues CREATE_BO and GET_BO_INFO.
func (d *Device) createBO(typ BOType, size int) (*BO, getBOInfo, error) {
	cb := createBO{Size: uint64(size), Type: uint32(typ)}
	if err := ioctl(d.fd, ioctlCreateBO, unsafe.Pointer(&cb)); err != nil {
		if isNoMem(err) && (typ == BOShare || typ == BODevHeap) && d.info.MemlockLimit != ^uint64(0) {
			return nil, getBOInfo{}, memlockError("CREATE_BO("+typ.String()+")", uint64(size), d.info.MemlockLimit, err)
		}
		return nil, getBOInfo{}, fmt.Errorf("xdna: CREATE_BO(%s, %s): %w", typ, fmtBytes(uint64(size)), err)
	}
	bi := getBOInfo{Handle: cb.Handle}
	if err := ioctl(d.fd, ioctlGetBOInfo, unsafe.Pointer(&bi)); err != nil {
		d.gemClose(cb.Handle)
		return nil, getBOInfo{}, fmt.Errorf("xdna: GET_BO_INFO: %w", err)
	}
	return &BO{dev: d, handle: cb.Handle, typ: typ, size: size, heapAt: -1}, bi, nil
}

func isNoMem(err error) bool {
	return errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EPERM)
}

func (d *Device) gemClose(h uint32) {
	gc := gemClose{Handle: h}
	_ = ioctl(d.fd, ioctlGemClose, unsafe.Pointer(&gc))
}

// mapHeap creates the DEV_HEAP BO and maps it at a 64 MiB-aligned host
// address: reserve twice the size, map the heap over the aligned middle with
// MAP_FIXED, release the rest.
func (d *Device) mapHeap(size int) error {
	bo, bi, err := d.createBO(BODevHeap, size)
	if err != nil {
		return err
	}
	d.heap = bo
	base, err := mapAligned(size, HeapAlign, func(at unsafe.Pointer) (unsafe.Pointer, error) {
		return unix.MmapPtr(d.fd, int64(bi.MapOffset), at, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
	})
	if err != nil {
		if isNoMem(err) {
			return memlockError("mapping the device heap", uint64(size), d.info.MemlockLimit, err)
		}
		return fmt.Errorf("xdna: map device heap: %w", err)
	}
	d.heapBase, d.heapSize = base, size
	bo.host = unsafe.Slice((*byte)(base), size)
	bo.addr = bi.XdnaAddr
	bo.heapAt = 0
	return nil
}

// Alloc allocates a buffer. BOShare buffers (activations, weights) are
// mmapped; BODev buffers (PDIs, instruction streams) are carved from the
// heap by the driver and reached through the heap mapping; BOCmd buffers
// hold command packets.
func (d *Device) Alloc(typ BOType, size int) (*BO, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("xdna: device closed")
	}
	if size <= 0 {
		return nil, fmt.Errorf("xdna: buffer of %d bytes", size)
	}
	page := os.Getpagesize()
	if typ != BODev {
		size = (size + page - 1) / page * page
	}
	bo, bi, err := d.createBO(typ, size)
	if err != nil {
		return nil, err
	}
	switch typ {
	case BODev:
		at := int64(bi.XdnaAddr) - int64(d.heap.addr)
		if bi.XdnaAddr == invalidAddr || at < 0 || at+int64(size) > int64(d.heapSize) {
			d.gemClose(bo.handle)
			return nil, fmt.Errorf("xdna: DEV BO at device address %#x is outside the heap [%#x,+%d)", bi.XdnaAddr, d.heap.addr, d.heapSize)
		}
		bo.heapAt = int(at)
		bo.host = d.heap.host[at : at+int64(size) : at+int64(size)]
		bo.addr = bi.XdnaAddr
	case BOShare, BOCmd:
		host, err := unix.Mmap(d.fd, int64(bi.MapOffset), size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			d.gemClose(bo.handle)
			if isNoMem(err) {
				return nil, memlockError("mapping a "+typ.String()+" buffer", uint64(size), d.info.MemlockLimit, err)
			}
			return nil, fmt.Errorf("xdna: mmap %s buffer: %w", typ, err)
		}
		bo.host, bo.mapped = host, true
		bo.addr = bi.XdnaAddr
		if bi.XdnaAddr == invalidAddr || bi.XdnaAddr == 0 {
			bo.addr = uint64(uintptr(unsafe.Pointer(&host[0])))
		}
	default:
		d.gemClose(bo.handle)
		return nil, fmt.Errorf("xdna: cannot allocate a %s buffer", typ)
	}
	d.bos = append(d.bos, bo)
	return bo, nil
}

// Sync flushes (toDevice) or invalidates (from device) the CPU caches over
// a view: NPU DMA does not snoop them. DEV buffers are synced as a range of
// the heap, which is the BO whose pages back them.
func (v View) Sync(toDevice bool) error {
	b := v.BO
	d := b.dev
	dir := uint32(syncFromDevice)
	if toDevice {
		dir = syncToDevice
	}
	s := syncBO{Handle: b.handle, Direction: dir, Offset: uint64(v.Off), Size: uint64(v.Size)}
	if b.typ == BODev {
		s.Handle, s.Offset = d.heap.handle, uint64(b.heapAt+v.Off)
	}
	if err := ioctl(d.fd, ioctlSyncBO, unsafe.Pointer(&s)); err != nil {
		return fmt.Errorf("xdna: SYNC_BO(%s, [%d,+%d)): %w", b.typ, v.Off, v.Size, err)
	}
	return nil
}

// free unmaps and closes one BO.
func (d *Device) free(b *BO) {
	if b.mapped && b.host != nil {
		unix.Munmap(b.host)
	}
	b.host = nil
	d.gemClose(b.handle)
}

// Free releases a buffer before Close.
func (b *BO) Free() {
	d := b.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, x := range d.bos {
		if x == b {
			d.bos = append(d.bos[:i], d.bos[i+1:]...)
			d.free(b)
			return
		}
	}
}

// Context is a hardware context: one xclbin's partition with its PDI bound
// as CU 0.
type Context struct {
	dev     *Device
	handle  uint32
	syncobj uint32
	pdi     *BO
	cols    uint16
}

// CreateContext creates a hardware context from an xclbin image.
func (d *Device) CreateContext(xclbin []byte) (*Context, error) {
	x, err := ParseXclbin(xclbin)
	if err != nil {
		return nil, err
	}
	pdi, err := d.Alloc(BODev, len(x.PDI))
	if err != nil {
		return nil, fmt.Errorf("xdna: PDI buffer: %w", err)
	}
	copy(pdi.host, x.PDI)
	if err := pdi.All().Sync(true); err != nil {
		return nil, err
	}
	qos := make([]byte, sizeofQos)
	binary.LittleEndian.PutUint32(qos[24:], userStartColNotRequested)
	maxOpc := x.OpsPerCycle
	if maxOpc == 0 {
		maxOpc = 2048
	}
	ch := createHwctx{
		QosP:     uint64(uintptr(unsafe.Pointer(&qos[0]))),
		MaxOpc:   maxOpc,
		NumTiles: uint32(x.ColumnWidth) * uint32(d.info.AIE.Core.RowCount),
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err = ioctl(d.fd, ioctlCreateHwctx, unsafe.Pointer(&ch))
	runtime.KeepAlive(qos)
	if err != nil {
		switch {
		case errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ENOMEM):
			in := 0
			if d.info.ContextsKnown {
				var fresh Info
				query(d.fd, &fresh)
				in = fresh.ContextsInUse
			}
			return nil, noContextsError(err, in, d.info.ContextLimit)
		case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EOPNOTSUPP):
			return nil, tooOldError("CREATE_HWCTX", err)
		}
		return nil, fmt.Errorf("xdna: CREATE_HWCTX (%d columns, %d tiles): %w", x.ColumnWidth, ch.NumTiles, err)
	}
	c := &Context{dev: d, handle: ch.Handle, syncobj: ch.SyncobjHandle, pdi: pdi, cols: x.ColumnWidth}
	d.ctxs = append(d.ctxs, c)
	if c.syncobj == 0 {
		return nil, tooOldError("CREATE_HWCTX (no completion syncobj returned)", errors.New("driver predates timeline syncobjs"))
	}
	// CONFIG_CU: {num_cus u16, pad[3]u16, {cu_bo u32, cu_func u8, pad[3]}}.
	cfg := make([]byte, 16)
	binary.LittleEndian.PutUint16(cfg[0:], 1)
	binary.LittleEndian.PutUint32(cfg[8:], pdi.handle)
	cc := configHwctx{Handle: c.handle, ParamType: configCUParam, ParamVal: uint64(uintptr(unsafe.Pointer(&cfg[0]))), ParamValSize: uint32(len(cfg))}
	err = ioctl(d.fd, ioctlConfigHwctx, unsafe.Pointer(&cc))
	runtime.KeepAlive(cfg)
	if err != nil {
		return nil, fmt.Errorf("xdna: CONFIG_HWCTX(CONFIG_CU): %w", err)
	}
	return c, nil
}

// Kernel is an instruction stream loaded for one context, with its command
// buffer.
type Kernel struct {
	ctx   *Context
	name  string
	insts *BO
	n     uint32
	cmd   *BO
}

// LoadKernel copies an instruction stream (insts.bin) into a DEV buffer.
func (c *Context) LoadKernel(name string, insts []byte) (*Kernel, error) {
	if len(insts) == 0 || len(insts)%4 != 0 {
		return nil, fmt.Errorf("xdna: %s: instruction stream of %d bytes", name, len(insts))
	}
	bo, err := c.dev.Alloc(BODev, len(insts))
	if err != nil {
		return nil, fmt.Errorf("xdna: %s instructions: %w", name, err)
	}
	copy(bo.host, insts)
	if err := bo.All().Sync(true); err != nil {
		return nil, err
	}
	cmd, err := c.dev.Alloc(BOCmd, 4096)
	if err != nil {
		return nil, fmt.Errorf("xdna: %s command buffer: %w", name, err)
	}
	return &Kernel{ctx: c, name: name, insts: bo, n: uint32(len(insts)), cmd: cmd}, nil
}

// Run submits one run with the given buffer arguments (bo0..bo4) and waits
// for it. It does not sync the buffers: the caller flushes what the host
// wrote and invalidates what it will read.
func (k *Kernel) Run(args []View) error {
	addrs := make([]uint64, len(args))
	handles := []uint32{k.insts.handle}
	seen := map[uint32]bool{k.insts.handle: true}
	for i, a := range args {
		addrs[i] = a.Addr()
		if h := a.BO.handle; !seen[h] {
			seen[h] = true
			handles = append(handles, h)
		}
	}
	p, err := StartCUPacket(k.insts.addr, k.n, addrs)
	if err != nil {
		return fmt.Errorf("%s: %w", k.name, err)
	}
	// The driver reads the command buffer with the CPU (it copies the
	// payload into a firmware message), so it needs no cache flush.
	for i, w := range p {
		binary.LittleEndian.PutUint32(k.cmd.host[4*i:], w)
	}
	d := k.ctx.dev
	ec := execCmd{
		Hwctx: k.ctx.handle, CmdHandles: uint64(k.cmd.handle), CmdCount: 1,
		Args: uint64(uintptr(unsafe.Pointer(&handles[0]))), ArgCount: uint32(len(handles)),
	}
	err = ioctl(d.fd, ioctlExecCmd, unsafe.Pointer(&ec))
	runtime.KeepAlive(handles)
	if err != nil {
		return fmt.Errorf("xdna: %s: EXEC_CMD: %w", k.name, err)
	}
	if err := k.ctx.wait(ec.Seq, d.timeout); err != nil {
		if errors.Is(err, ErrTimeout) {
			return timeoutError(k.name, d.timeout)
		}
		return fmt.Errorf("xdna: %s: %w", k.name, err)
	}
	if s := headerState(binary.LittleEndian.Uint32(k.cmd.host)); s != StateCompleted {
		return commandError(k.name, s)
	}
	return nil
}

// wait blocks on the context's timeline syncobj until point seq signals, or
// an absolute CLOCK_MONOTONIC deadline passes (a relative value would be a
// deadline in the past).
func (c *Context) wait(seq uint64, timeout time.Duration) error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return err
	}
	handles := []uint32{c.syncobj}
	points := []uint64{seq}
	w := timelineWait{
		Handles: uint64(uintptr(unsafe.Pointer(&handles[0]))), Points: uint64(uintptr(unsafe.Pointer(&points[0]))),
		TimeoutNsec: ts.Nano() + timeout.Nanoseconds(), CountHandles: 1,
		// Wait for the fence to appear as well as to signal, as XRT's shim
		// does (taconite passes 0; both work once EXEC_CMD has returned).
		Flags: waitForSubmit,
	}
	err := ioctl(c.dev.fd, ioctlTimelineWait, unsafe.Pointer(&w))
	runtime.KeepAlive(handles)
	runtime.KeepAlive(points)
	if errors.Is(err, unix.ETIME) || errors.Is(err, syscall.ETIMEDOUT) {
		return ErrTimeout
	}
	if err != nil {
		return fmt.Errorf("SYNCOBJ_TIMELINE_WAIT: %w", err)
	}
	return nil
}

// Close destroys every context, frees every buffer, unmaps the heap and
// closes the device, in that order.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var first error
	for i := len(d.ctxs) - 1; i >= 0; i-- {
		dh := destroyHwctx{Handle: d.ctxs[i].handle}
		if err := ioctl(d.fd, ioctlDestroyHwctx, unsafe.Pointer(&dh)); err != nil && first == nil {
			first = fmt.Errorf("xdna: DESTROY_HWCTX: %w", err)
		}
	}
	d.ctxs = nil
	for i := len(d.bos) - 1; i >= 0; i-- {
		d.free(d.bos[i])
	}
	d.bos = nil
	if d.heap != nil {
		if d.heapBase != nil {
			unix.MunmapPtr(d.heapBase, uintptr(d.heapSize))
		}
		d.heap.host = nil
		d.gemClose(d.heap.handle)
		d.heap = nil
	}
	if d.fd >= 0 {
		if err := unix.Close(d.fd); err != nil && first == nil {
			first = err
		}
		d.fd = -1
	}
	return first
}

// waitForSubmit is DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT.
const waitForSubmit = 1 << 1

// mapAligned maps size bytes at a host address aligned to align: it
// reserves size+align bytes of address space (PROT_NONE), lets mapAt map
// over the aligned address inside with MAP_FIXED, and releases the
// reservation around it. The firmware rejects a heap whose host mapping is
// not 64 MiB aligned.
func mapAligned(size, align int, mapAt func(at unsafe.Pointer) (unsafe.Pointer, error)) (unsafe.Pointer, error) {
	total := size + align
	res, err := unix.MmapPtr(-1, 0, nil, uintptr(total), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes of address space: %w", total, err)
	}
	pad := int((uintptr(align) - uintptr(res)%uintptr(align)) % uintptr(align))
	base := unsafe.Add(res, pad)
	got, err := mapAt(base)
	if err != nil || got != base {
		unix.MunmapPtr(res, uintptr(total))
		if err == nil {
			err = fmt.Errorf("mapped at %p, not the aligned %p", got, base)
			unix.MunmapPtr(got, uintptr(size))
		}
		return nil, err
	}
	if pad > 0 {
		unix.MunmapPtr(res, uintptr(pad))
	}
	if tail := total - pad - size; tail > 0 {
		unix.MunmapPtr(unsafe.Add(base, size), uintptr(tail))
	}
	return base, nil
}
