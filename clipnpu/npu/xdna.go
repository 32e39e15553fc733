package npu

// The real device for the replay: the amdxdna driver through package xdna
// (direct ioctls, no XRT, no cgo). One hardware context per distinct xclbin
// (8 for CLIP), one instruction stream per kernel record, SHARE buffers for
// activations and packed weights. Never run on hardware by this project;
// see NPU.md.

import (
	"fmt"
	"os"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/xdna"
)

type xdnaDevice struct {
	dev  *xdna.Device
	ctxs map[string]*xdna.Context // by bundle-relative xclbin path
}

type xdnaBuffer struct{ bo *xdna.BO }

func (b *xdnaBuffer) Bytes() []byte { return b.bo.Bytes() }

func (b *xdnaBuffer) Sync(off, size int, toDevice bool) error {
	v, err := b.bo.View(off, size)
	if err != nil {
		return err
	}
	return v.Sync(toDevice)
}

type xdnaKernel struct{ k *xdna.Kernel }

func (k *xdnaKernel) Run(args []bufView) error {
	vs := make([]xdna.View, len(args))
	for i, a := range args {
		xb, ok := a.buf.(*xdnaBuffer)
		if !ok {
			return fmt.Errorf("argument %d is not an NPU buffer", i)
		}
		vs[i] = xdna.View{BO: xb.bo, Off: a.off, Size: a.size}
	}
	return k.k.Run(vs)
}

func (d *xdnaDevice) Alloc(size int) (npuBuffer, error) {
	bo, err := d.dev.Alloc(xdna.BOShare, size)
	if err != nil {
		return nil, err
	}
	// Fresh pages are zero; flush so no dirty line later overwrites what
	// the NPU writes.
	if err := bo.All().Sync(true); err != nil {
		return nil, err
	}
	return &xdnaBuffer{bo: bo}, nil
}

func (d *xdnaDevice) LoadKernel(b *bundle.Bundle, s kernelSpec) (npuKernel, error) {
	ctx, ok := d.ctxs[s.Xclbin]
	if !ok {
		p, err := b.Path(s.Xclbin)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read xclbin: %w", err)
		}
		if ctx, err = d.dev.CreateContext(data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		d.ctxs[s.Xclbin] = ctx
	}
	p, err := b.Path(s.Insts)
	if err != nil {
		return nil, err
	}
	insts, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read instruction stream: %w", err)
	}
	k, err := ctx.LoadKernel(s.Key, insts)
	if err != nil {
		return nil, err
	}
	return &xdnaKernel{k: k}, nil
}

func (d *xdnaDevice) Describe() (string, string) {
	i := d.dev.Info()
	return "npu", fmt.Sprintf("%s (amdxdna %s, firmware %s); direct ioctl path, not yet validated on hardware by clipidx",
		i.Node, i.DriverVersion, i.FirmwareString())
}

func (d *xdnaDevice) Contexts() int { return len(d.ctxs) }

func (d *xdnaDevice) Close() error { return d.dev.Close() }
