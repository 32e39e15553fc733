package npu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// Opener opens a bundle on an NPU: OpenDevice on this platform, a fake in
// tests. It returns an error wrapping ErrNoDevice when no NPU is usable.
type Opener func(dir string, opts core.Options) (core.Backend, error)

// Route opens a taconite bundle: the NPU for "npu" (or an error), the
// emulated kernels for "cpu", the NPU else the emulated kernels for auto.
// Only an error wrapping ErrNoDevice falls back; a damaged bundle is
// reported as it is. open is OpenDevice outside tests; nil stands for a
// build without NPU support.
func Route(dir string, opts core.Options, openNPU Opener) (core.Backend, error) {
	switch opts.Device {
	case "reference":
		return nil, fmt.Errorf("%s is a taconite NPU bundle: the float32 reference forward reads only Hugging Face folders (config.json, model.safetensors); use device auto or cpu (kernels emulated on the CPU) or npu", dir)
	case "npu":
		if openNPU == nil {
			return nil, fmt.Errorf("this build has no NPU support: %w", core.ErrNoDevice)
		}
		return openNPU(dir, opts)
	case "cpu":
		return openEmulated(dir, opts, "device cpu: bundle kernels emulated on the CPU")
	}
	why := "this build has no NPU support"
	if openNPU != nil {
		b, err := openNPU(dir, opts)
		if err == nil || !errors.Is(err, core.ErrNoDevice) {
			return b, err
		}
		why = ShortReason(err)
	}
	return openEmulated(dir, opts, "no usable NPU ("+why+"); bundle kernels emulated on the CPU")
}

// openEmulated replays the bundle on the emulated device, note (plus the
// numerics caveat) becoming Info.DeviceNote.
func openEmulated(dir string, opts core.Options, note string) (core.Backend, error) {
	dev := NewEmuDevice(opts.Threads)
	dev.note = note + ", with the bf16 numerics clipnpu/NPU.md assumes (not hardware; slow)"
	return OpenBundle(dir, opts, dev)
}

// ShortReason cuts an ErrNoDevice error down to its first one or two
// clauses, for a one-line note: "no NPU device node: /dev/accel/accel0 does
// not exist".
func ShortReason(err error) string {
	s := err.Error()
	for _, p := range []string{core.ErrNoDevice.Error() + ": ", "xdna: "} {
		s = strings.TrimPrefix(s, p)
	}
	if i := strings.IndexAny(s, ";\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	parts := strings.SplitN(s, ": ", 3)
	s = parts[0]
	if len(parts) > 1 && len(parts[1]) <= 80 {
		s += ": " + parts[1]
	}
	return s
}
