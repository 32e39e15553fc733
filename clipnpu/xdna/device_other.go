//go:build !linux

package xdna

// Device is an open amdxdna device; on this system it cannot be opened.
type Device struct{}

// Context is a hardware context.
type Context struct{}

// Kernel is a loaded instruction stream.
type Kernel struct{}

// Probe reports that the driver interface is not available here.
func Probe(path string) (Info, error) { return Info{}, ErrNotAvailable }

// Open reports that the driver interface is not available here.
func Open(opts Options) (*Device, error) { return nil, ErrNotAvailable }

// Info returns nothing on this system.
func (d *Device) Info() Info { return Info{} }

// Alloc reports that the driver interface is not available here.
func (d *Device) Alloc(typ BOType, size int) (*BO, error) { return nil, ErrNotAvailable }

// CreateContext reports that the driver interface is not available here.
func (d *Device) CreateContext(xclbin []byte) (*Context, error) { return nil, ErrNotAvailable }

// Close does nothing on this system.
func (d *Device) Close() error { return nil }

// Sync reports that the driver interface is not available here.
func (v View) Sync(toDevice bool) error { return ErrNotAvailable }

// Free does nothing on this system.
func (b *BO) Free() {}

// LoadKernel reports that the driver interface is not available here.
func (c *Context) LoadKernel(name string, insts []byte) (*Kernel, error) {
	return nil, ErrNotAvailable
}

// Run reports that the driver interface is not available here.
func (k *Kernel) Run(args []View) error { return ErrNotAvailable }
