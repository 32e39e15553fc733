package npu

import (
	"errors"
	"fmt"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/xdna"
)

// OpenDevice opens the first amdxdna device and replays the bundle in dir on
// it. Every failure to get a usable device wraps ErrNoDevice with the
// driver-level reason (no node, permissions, memlock, contexts, versions).
func OpenDevice(dir string, opts core.Options) (core.Backend, error) {
	dev, err := xdna.Open(xdna.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", core.ErrNoDevice, err)
	}
	if !bundle.IsBundle(dir) {
		dev.Close()
		return nil, fmt.Errorf("%w: %s is not a taconite NPU bundle (manifest.txt, tensors.txt, tensors.bin): the NPU runs only bundles exported by IRON", core.ErrNoDevice, dir)
	}
	b, err := OpenBundle(dir, opts, &xdnaDevice{dev: dev, ctxs: map[string]*xdna.Context{}})
	if err != nil && !errors.Is(err, core.ErrBadModel) {
		return nil, fmt.Errorf("%w: %w", core.ErrNoDevice, err)
	}
	return b, err
}
